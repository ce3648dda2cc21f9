/**
 * The kv-engine deployments the etcd client tests run against, each serving etcd's KV
 * service: one node without Raft (an MvccStore behind LocalEtcdBackend), a one-member
 * cluster and a three-member cluster (ClusterNode in process; the clients are given every
 * member's address).
 */
import { startEtcdTestCluster } from "./etcd-test-cluster.js";
import { startEtcdTestServer, TEST_CLUSTER_ID, TEST_MEMBER_ID } from "./etcd-test-server.js";

export type EtcdTargetKind = "single node" | "1-member cluster" | "3-member cluster";

export const ETCD_TARGETS: readonly EtcdTargetKind[] = [
  "single node",
  "1-member cluster",
  "3-member cluster",
];

export interface EtcdTarget {
  /** Every member's client address ("127.0.0.1:PORT"). */
  readonly endpoints: readonly string[];
  /** The cluster ID the answers' headers carry. */
  readonly clusterId: number;
  /** The member IDs they may carry (the member answering). */
  readonly memberIds: readonly number[];
  stop(): Promise<void>;
}

export async function startEtcdTarget(kind: EtcdTargetKind): Promise<EtcdTarget> {
  if (kind === "single node") {
    const s = await startEtcdTestServer();
    return {
      endpoints: [s.address],
      clusterId: Number(TEST_CLUSTER_ID),
      memberIds: [Number(TEST_MEMBER_ID)],
      stop: () => s.stop(),
    };
  }
  const c = await startEtcdTestCluster(kind === "1-member cluster" ? 1 : 3);
  return {
    endpoints: c.addresses,
    clusterId: c.nodes[0]!.store.clusterId,
    memberIds: c.nodes.map((n) => n.store.memberId),
    stop: () => c.stop(),
  };
}
