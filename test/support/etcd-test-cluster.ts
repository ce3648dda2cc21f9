/**
 * kv-engine clusters serving etcd's KV service in this process for tests: `size` members
 * (ClusterNode, each on its own in-memory file system, client and peer ports on
 * 127.0.0.1), started together, resolved once a leader is elected and every member
 * applied it. The answers' headers carry the cluster's real ids.
 */
import { ClusterNode } from "../../src/cluster/cluster-node.js";
import type { EtcdServiceOptions } from "../../src/etcd/etcd-flags.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { freePort } from "./cluster-processes.js";
import { waitFor } from "./wait-for.js";

export interface EtcdTestCluster {
  readonly nodes: readonly ClusterNode[];
  /** Every member's client address ("127.0.0.1:PORT"), in member order. */
  readonly addresses: readonly string[];
  /** The client address of the member that leads now (throws when none does). */
  leaderAddress(): string;
  /** A member that does not lead now (the first, on a single-member cluster). */
  followerAddress(): string;
  stop(): Promise<void>;
}

export async function startEtcdTestCluster(
  size: number,
  etcd: EtcdServiceOptions = {},
): Promise<EtcdTestCluster> {
  const slots = [];
  for (let i = 1; i <= size; i++) {
    slots.push({ name: `n${i}`, port: await freePort(), peerPort: await freePort() });
  }
  const initialCluster = slots.map((s) => `${s.name}=127.0.0.1:${s.peerPort}`).join(",");
  const nodes = await Promise.all(
    slots.map((s, i) =>
      ClusterNode.start({
        dataDir: `/${s.name}`,
        fs: new MemoryFileSystem(),
        name: s.name,
        initialCluster,
        server: { host: "127.0.0.1", port: s.port },
        tickMs: 20,
        electionTicks: 10,
        seed: 11 + i,
        etcd,
      }),
    ),
  );
  const addresses = slots.map((s) => `127.0.0.1:${s.port}`);
  const leaderIndex = (): number => nodes.findIndex((n) => n.store.status().role === "leader");
  try {
    await waitFor(() => {
      const l = leaderIndex();
      if (l < 0) return false;
      const commit = nodes[l]!.store.status().commit;
      return nodes.every(
        (n) => n.store.status().applied >= commit && n.store.status().leader !== 0,
      );
    }, "a leader applied everywhere");
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop(0)));
    throw err;
  }
  return {
    nodes,
    addresses,
    leaderAddress() {
      const l = leaderIndex();
      if (l < 0) throw new Error("no member leads");
      return addresses[l]!;
    },
    followerAddress() {
      const l = leaderIndex();
      return addresses[l === 0 && size > 1 ? 1 : 0]!;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop(0)));
    },
  };
}
