/**
 * An etcd cluster for the benchmarks: the `etcd` on PATH (etcd 3.4, e.g. Debian's
 * etcd-server package: `apt-get install etcd-server`), plain HTTP on 127.0.0.1, etcd's
 * defaults for everything the scenarios do not name (heartbeat 100 ms, election timeout
 * 1000 ms, snapshot every 100,000 entries, WAL fsynced per Ready), logs at warn on
 * stderr. A member serves once Maintenance.Status answers on its client port. See
 * ./cluster.ts.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { nowNs } from "../lib/stats.js";
import {
  type BenchCluster,
  freePort,
  type MemberClient,
  MemberProcess,
  type MemberState,
  waitUntil,
} from "./cluster.js";
import { EtcdClient } from "./etcd-client.js";

const START_TIMEOUT_MS = 30_000;

/** The path of `etcd` on PATH, or undefined. */
export function etcdOnPath(): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    const path = join(dir, "etcd");
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** Why the etcd rows are skipped when etcd is not installed. */
export const ETCD_MISSING =
  "skipped: etcd is not on PATH (install etcd 3.4: apt-get install etcd-server)";

/** How long a member add refused as "unhealthy cluster" is retried. */
const ADD_RETRY_MS = 30_000;

/**
 * MemberAdd, retried while etcd refuses it as "unhealthy cluster" (its strict
 * reconfiguration check wants every member connected for 5 s); with the send time of the
 * accepted attempt.
 */
async function addAccepted(admin: EtcdClient, peerUrl: string) {
  const until = Date.now() + ADD_RETRY_MS;
  for (;;) {
    const t0 = nowNs();
    try {
      return { t0, r: await admin.memberAdd([peerUrl]) };
    } catch (err) {
      if (!String(err).includes("unhealthy cluster") || Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

class EtcdClientOfMember implements MemberClient {
  constructor(private readonly c: EtcdClient) {}
  async put(key: Uint8Array, value: Uint8Array, timeoutMs?: number): Promise<void> {
    await this.c.put(key, value, timeoutMs);
  }
  putBatch(keys: readonly Uint8Array[], values: readonly Uint8Array[]): Promise<void> {
    return this.c.txnPuts(keys, values);
  }
  get(key: Uint8Array, timeoutMs?: number): Promise<Uint8Array | undefined> {
    return this.c.get(key, timeoutMs);
  }
  close(): void {
    this.c.close();
  }
}

export class EtcdCluster implements BenchCluster {
  readonly kind = "etcd" as const;
  private readonly members = new Map<string, MemberProcess>();
  private readonly clients = new Map<string, EtcdClientOfMember>();
  private readonly statusClients = new Map<string, EtcdClient>();
  /** Member ID (decimal) -> name. */
  private readonly ids = new Map<string, string>();

  private constructor(
    private readonly etcd: string,
    private readonly dir: string,
    private readonly token: string,
  ) {}

  static async start(dir: string, size = 3): Promise<EtcdCluster> {
    const etcd = etcdOnPath();
    if (etcd === undefined) throw new Error(ETCD_MISSING);
    const c = new EtcdCluster(etcd, dir, `bench-${process.pid}-${Date.now()}`);
    const specs = await Promise.all(
      Array.from({ length: size }, async (_, i) => ({
        name: `n${i + 1}`,
        client: await freePort(),
        peer: await freePort(),
      })),
    );
    const initial = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peer}`).join(",");
    try {
      await Promise.all(specs.map((s) => c.launch(s.name, s.client, s.peer, initial, "new")));
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  private async launch(
    name: string,
    client: number,
    peer: number,
    initial: string,
    state: "new" | "existing",
  ): Promise<void> {
    const clientUrl = `http://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    const args = [
      "--name",
      name,
      "--data-dir",
      join(this.dir, name),
      "--listen-client-urls",
      clientUrl,
      "--advertise-client-urls",
      clientUrl,
      "--listen-peer-urls",
      peerUrl,
      "--initial-advertise-peer-urls",
      peerUrl,
      "--initial-cluster",
      initial,
      "--initial-cluster-token",
      this.token,
      "--initial-cluster-state",
      state,
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
      "--log-level",
      "warn",
    ];
    const p = new MemberProcess(name, this.etcd, args, `127.0.0.1:${client}`, `127.0.0.1:${peer}`);
    this.members.set(name, p);
    await this.serve(p);
  }

  /** Spawns `p` and waits until its Status answers. */
  private async serve(p: MemberProcess): Promise<void> {
    const child = p.spawn();
    let ended: string | undefined;
    child.once("exit", (code, signal) => {
      ended = `etcd member ${p.name} ended (${signal ?? code}): ${p.stderr()}`;
    });
    await waitUntil(
      async () => {
        if (ended !== undefined) throw new Error(ended);
        const s = await this.statusClient(p.clientAddress).status(500);
        this.ids.set(s.header.memberId.toString(), p.name);
        return true;
      },
      `etcd member ${p.name} serving`,
      START_TIMEOUT_MS,
      50,
    ).catch((err: unknown) => {
      throw new Error(ended ?? String(err));
    });
  }

  private statusClient(address: string): EtcdClient {
    let c = this.statusClients.get(address);
    if (c === undefined) {
      c = new EtcdClient(address);
      this.statusClients.set(address, c);
    }
    return c;
  }

  private member(name: string): MemberProcess {
    const m = this.members.get(name);
    if (m === undefined) throw new Error(`no member ${name}`);
    return m;
  }

  names(): string[] {
    return [...this.members.keys()];
  }

  clientAddress(name: string): string {
    return this.member(name).clientAddress;
  }

  running(name: string): boolean {
    return this.member(name).running();
  }

  async state(name: string, timeoutMs = 2000): Promise<MemberState> {
    const s = await this.statusClient(this.clientAddress(name)).status(timeoutMs);
    const leader = s.leader === 0n ? "" : (this.ids.get(s.leader.toString()) ?? "?");
    return {
      name,
      role: s.leader !== 0n && s.leader === s.header.memberId ? "leader" : "follower",
      term: Number(s.raftTerm),
      leader,
      appliedIndex: Number(s.raftAppliedIndex),
    };
  }

  client(name: string): MemberClient {
    let c = this.clients.get(name);
    if (c === undefined) {
      c = new EtcdClientOfMember(new EtcdClient(this.clientAddress(name)));
      this.clients.set(name, c);
    }
    return c;
  }

  kill(name: string): Promise<void> {
    return this.member(name).kill();
  }

  pause(name: string, paused: boolean): void {
    this.member(name).pause(paused);
  }

  async restart(name: string): Promise<void> {
    const m = this.member(name);
    if (m.running()) throw new Error(`member ${name} runs already`);
    await this.serve(m);
  }

  async add(name: string): Promise<number> {
    const client = await freePort();
    const peer = await freePort();
    const at = this.names().find((n) => this.running(n));
    if (at === undefined) throw new Error("no running member to add a member through");
    const admin = new EtcdClient(this.clientAddress(at), 10_000);
    try {
      const { t0, r } = await addAccepted(admin, `http://127.0.0.1:${peer}`);
      this.ids.set(r.member.id.toString(), name);
      // The new member has no name yet in the list: etcd names it on its first start.
      const initial = r.members
        .map((m) =>
          m.id === r.member.id
            ? `${name}=${m.peerUrls[0]}`
            : `${m.name === "" ? this.ids.get(m.id.toString()) : m.name}=${m.peerUrls[0]}`,
        )
        .join(",");
      await this.launch(name, client, peer, initial, "existing");
      return t0;
    } finally {
      admin.close();
    }
  }

  cpuSeconds(): number {
    return [...this.members.values()].reduce((a, m) => a + m.cpuSeconds(), 0);
  }

  async stop(): Promise<void> {
    for (const c of this.clients.values()) c.close();
    for (const c of this.statusClients.values()) c.close();
    this.clients.clear();
    this.statusClients.clear();
    await Promise.all([...this.members.values()].map((m) => m.kill()));
  }
}
