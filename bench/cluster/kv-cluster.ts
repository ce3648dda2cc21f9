/**
 * A kv-engine cluster for the benchmarks: `kv-engine serve` in cluster mode (the compiled
 * CLI, under the benchmark's node flags), CLI defaults for everything the scenarios do
 * not name (tick 100 ms, 6 election ticks, snapshots every 10,000 entries; durable: the
 * cluster mode always syncs its Raft log). A member serves once it printed its listening
 * line. See ./cluster.ts.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KvClient } from "../../src/client/index.js";
import { nowNs } from "../lib/stats.js";
import {
  type BenchCluster,
  freePort,
  type MemberClient,
  MemberProcess,
  type MemberState,
} from "./cluster.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const START_TIMEOUT_MS = 30_000;

function lineOf(p: MemberProcess): Promise<string> {
  const child = p.spawn();
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`kv-engine member ${p.name} not listening after 30 s: ${p.stderr()}`));
    }, START_TIMEOUT_MS);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("\n")) {
        clearTimeout(timer);
        resolve(out.slice(0, out.indexOf("\n")));
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`kv-engine member ${p.name} ended (${signal ?? code}): ${p.stderr()}`));
    });
  });
}

class KvClientOfMember implements MemberClient {
  constructor(private readonly c: KvClient) {}
  put(key: Uint8Array, value: Uint8Array, timeoutMs?: number): Promise<void> {
    return this.c.put(key, value, timeoutMs === undefined ? undefined : { timeoutMs });
  }
  putBatch(keys: readonly Uint8Array[], values: readonly Uint8Array[]): Promise<void> {
    return this.c.write(keys.map((key, i) => ({ type: "put" as const, key, value: values[i]! })));
  }
  get(key: Uint8Array, timeoutMs?: number): Promise<Uint8Array | undefined> {
    return this.c.get(key, timeoutMs === undefined ? undefined : { timeoutMs });
  }
  close(): void {
    this.c.close();
  }
}

export class KvCluster implements BenchCluster {
  readonly kind = "kv-engine" as const;
  private readonly members = new Map<string, MemberProcess>();
  private readonly clients = new Map<string, KvClientOfMember>();
  private readonly statusClients = new Map<string, KvClient>();

  private constructor(
    private readonly dir: string,
    private readonly token: string,
    private readonly extraArgs: readonly string[],
  ) {}

  /**
   * Starts members n1..n`size` in `dir` (with `extraArgs` added to each one's flags, e.g.
   * other timeouts for an experiment); resolves once every one listens.
   */
  static async start(dir: string, size = 3, extraArgs: readonly string[] = []): Promise<KvCluster> {
    const c = new KvCluster(dir, `bench-${process.pid}-${Date.now()}`, extraArgs);
    const specs = await Promise.all(
      Array.from({ length: size }, async (_, i) => ({
        name: `n${i + 1}`,
        client: await freePort(),
        peer: await freePort(),
      })),
    );
    const initial = specs.map((s) => `${s.name}=127.0.0.1:${s.peer}`).join(",");
    try {
      await Promise.all(
        specs.map((s) => c.launch(s.name, s.client, s.peer, ["--initial-cluster", initial])),
      );
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  private async launch(name: string, client: number, peer: number, extra: string[]) {
    const args = [
      ...process.execArgv,
      CLI,
      "serve",
      "--data-dir",
      join(this.dir, name),
      "--host",
      "127.0.0.1",
      "--port",
      String(client),
      "--name",
      name,
      "--initial-cluster-token",
      this.token,
      ...this.extraArgs,
      ...extra,
    ];
    const p = new MemberProcess(
      name,
      process.execPath,
      args,
      `127.0.0.1:${client}`,
      `127.0.0.1:${peer}`,
    );
    this.members.set(name, p);
    await lineOf(p);
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
    const address = this.clientAddress(name);
    let c = this.statusClients.get(address);
    if (c === undefined) {
      c = new KvClient(address);
      this.statusClients.set(address, c);
    }
    const s = await c.status(address, { timeoutMs });
    const leader =
      s.leaderId === 0
        ? ""
        : s.leaderId === s.memberId
          ? name
          : ([...this.members.values()].find((m) => m.clientAddress === s.leaderClientAddress)
              ?.name ?? "?");
    return { name, role: s.role, term: s.term, leader, appliedIndex: s.appliedIndex };
  }

  client(name: string): MemberClient {
    let c = this.clients.get(name);
    if (c === undefined) {
      c = new KvClientOfMember(new KvClient(this.clientAddress(name)));
      this.clients.set(name, c);
    }
    return c;
  }

  userClient(timeoutMs: number): MemberClient {
    const all = this.names().map((n) => this.clientAddress(n));
    return new KvClientOfMember(new KvClient(all, { timeoutMs }));
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
    await lineOf(m);
  }

  async add(name: string): Promise<number> {
    const client = await freePort();
    const peer = await freePort();
    const running = this.names().filter((n) => this.running(n));
    const admin = new KvClient(
      running.map((n) => this.clientAddress(n)),
      { timeoutMs: 10_000 },
    );
    try {
      const t0 = nowNs();
      const r = await admin.memberAdd({
        name,
        peerAddress: `127.0.0.1:${peer}`,
        clientAddress: `127.0.0.1:${client}`,
      });
      const initial = r.members.map((m) => `${m.name}=${m.peerAddress}`).join(",");
      await this.launch(name, client, peer, [
        "--initial-cluster",
        initial,
        "--initial-cluster-state",
        "existing",
      ]);
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
