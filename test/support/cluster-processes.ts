/**
 * A cluster of real `kv-engine serve` processes on 127.0.0.1, for multi-process tests
 * (and the chaos and benchmark harnesses): ports allocated up front (bound to 0, then
 * released), optionally a TcpProxy per directed peer link, wired in with the peer dial
 * override test hook (`--peer-dial-override`), so that a test cuts links without root.
 *
 * Each member process prints one line when it accepts calls:
 *   kv-engine listening on HOST:PORT peer HOST:PEERPORT name NAME member ID cluster ID
 * which `startMember` parses. `stop()` ends every process it started (SIGKILL after a
 * grace) and removes the data directories.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, type ServiceError } from "@grpc/grpc-js";
import { KvClient } from "../../src/client/kv-client.js";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
} from "../../src/proto/gen/grpc/health/v1/health_pb.js";
import { exited } from "./child.js";
import { CLI } from "./server-process.js";
import { TcpProxy } from "./tcp-proxy.js";

export interface MemberProcess {
  readonly name: string;
  readonly clientAddress: string;
  readonly peerAddress: string;
  readonly dataDir: string;
  /** Set from the listening line. */
  memberId: string;
  clusterId: string;
  child: ChildProcess | undefined;
  /** Everything the process wrote to stderr (its logs), over all its runs. */
  stderr: string;
  /** The arguments it was started with (restart uses them). */
  args: string[];
}

/**
 * A port on 127.0.0.1 that is free now, for a process started later: picked at random below
 * Linux's ephemeral range (32768-60999), where no bind to port 0 (every other test's
 * servers, every outgoing connection) can take it in the meantime, and checked by binding.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = FIXED_PORTS_FROM + Math.floor(Math.random() * FIXED_PORTS);
    if (handedOut.has(port)) continue;
    const s = createServer();
    const ok = await new Promise<boolean>((resolve) => {
      s.once("error", () => resolve(false));
      s.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!ok) continue;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    handedOut.add(port);
    return port;
  }
}

const FIXED_PORTS_FROM = 20_000;
const FIXED_PORTS = 12_000;
/** Ports this process handed out already (a member restarted later binds its port again). */
const handedOut = new Set<number>();

/** Milliseconds per tick and ticks per election the test clusters run with (fast). */
export const TEST_TIMING = ["--tick-ms", "50", "--election-ticks", "10"];

export class ProcessCluster {
  readonly members = new Map<string, MemberProcess>();
  /** "from>to" -> the proxy `from` dials `to`'s peer port through. */
  readonly proxies = new Map<string, TcpProxy>();
  private readonly root = mkdtempSync(join(tmpdir(), "kv-cluster-"));
  private readonly clients: KvClient[] = [];
  private readonly health = new Map<string, Client>();

  private constructor(readonly token: string) {}

  /**
   * Starts `names.length` members of a new cluster (with a proxy per directed link when
   * `proxies`), resolving once every one printed its listening line. `timing`: the tick
   * flags (default TEST_TIMING; [] for the CLI's defaults).
   */
  static async start(
    names: readonly string[],
    o: { proxies?: boolean; extraArgs?: string[]; token?: string; timing?: string[] } = {},
  ): Promise<ProcessCluster> {
    const c = new ProcessCluster(o.token ?? `test-${process.pid}-${Date.now()}`);
    const specs = await Promise.all(
      names.map(async (name) => ({
        name,
        clientPort: await freePort(),
        peerPort: await freePort(),
      })),
    );
    if (o.proxies === true) {
      for (const from of specs) {
        for (const to of specs) {
          if (from === to) continue;
          const proxy = await TcpProxy.start(`127.0.0.1:${to.peerPort}`);
          c.proxies.set(`${from.name}>${to.name}`, proxy);
        }
      }
    }
    const initial = specs.map((s) => `${s.name}=127.0.0.1:${s.peerPort}`).join(",");
    // A member that fails to start fails the whole start, and nothing it started stays up.
    const started = Promise.all(
      specs.map((s) => {
        const overrides = specs
          .filter((t) => t !== s && c.proxies.has(`${s.name}>${t.name}`))
          .map((t) => `127.0.0.1:${t.peerPort}=${c.proxies.get(`${s.name}>${t.name}`)!.address}`);
        const args = [
          "--port",
          String(s.clientPort),
          "--name",
          s.name,
          "--initial-cluster",
          initial,
          "--initial-cluster-token",
          c.token,
          ...(o.timing ?? TEST_TIMING),
          ...(overrides.length === 0 ? [] : ["--peer-dial-override", overrides.join(",")]),
          ...(o.extraArgs ?? []),
        ];
        return c.startMember(s.name, `127.0.0.1:${s.clientPort}`, `127.0.0.1:${s.peerPort}`, args);
      }),
    );
    try {
      await started;
    } catch (err) {
      await c.stop().catch(() => {});
      throw err;
    }
    return c;
  }

  /** Starts (or restarts, with the same arguments when `args` is omitted) member `name`. */
  async startMember(
    name: string,
    clientAddress?: string,
    peerAddress?: string,
    args?: string[],
  ): Promise<MemberProcess> {
    let m = this.members.get(name);
    if (m === undefined) {
      if (clientAddress === undefined || peerAddress === undefined || args === undefined) {
        throw new Error(`member ${name} is new: give its addresses and arguments`);
      }
      m = {
        name,
        clientAddress,
        peerAddress,
        dataDir: join(this.root, name),
        memberId: "",
        clusterId: "",
        child: undefined,
        stderr: "",
        args,
      };
      this.members.set(name, m);
    }
    if (m.child !== undefined && m.child.exitCode === null && m.child.signalCode === null) {
      throw new Error(`member ${name} runs already`);
    }
    const child = spawn(process.execPath, [CLI, "serve", "--data-dir", m.dataDir, ...m.args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    m.child = child;
    const member = m;
    child.stderr?.on("data", (chunk: Buffer) => {
      member.stderr += chunk.toString("utf8");
    });
    const line = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        buf += chunk.toString("utf8");
        const i = buf.indexOf("\n");
        if (i >= 0) resolve(buf.slice(0, i));
      });
      child.once("exit", (code) =>
        reject(new Error(`member ${name} exited (${code}) before listening:\n${member.stderr}`)),
      );
    });
    const match =
      /^kv-engine listening on (\S+) peer (\S+) name (\S+) member ([0-9a-f]+) cluster ([0-9a-f]+)$/.exec(
        line,
      );
    if (match === null) throw new Error(`unexpected listening line: ${line}`);
    m.memberId = match[4]!;
    m.clusterId = match[5]!;
    return m;
  }

  member(name: string): MemberProcess {
    const m = this.members.get(name);
    if (m === undefined) throw new Error(`no member ${name}`);
    return m;
  }

  running(name: string): boolean {
    const c = this.members.get(name)?.child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  /** Sends `signal` to member `name` and resolves with its exit code once it exited. */
  async signal(name: string, signal: NodeJS.Signals): Promise<number | null> {
    const child = this.member(name).child;
    if (child === undefined) return null;
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited(child);
    return child.exitCode;
  }

  /** A client of the members named (default: all), with a deadline per call. */
  client(names?: readonly string[], timeoutMs = 5000): KvClient {
    const list = (names ?? [...this.members.keys()]).map((n) => this.member(n).clientAddress);
    const c = new KvClient(list, { timeoutMs });
    this.clients.push(c);
    return c;
  }

  /** The health status ("SERVING", "NOT_SERVING", or the error) of member `name`. */
  healthOf(name: string): Promise<string> {
    const address = this.member(name).clientAddress;
    let client = this.health.get(address);
    if (client === undefined) {
      client = new Client(address, credentials.createInsecure());
      this.health.set(address, client);
    }
    return new Promise((resolve) => {
      client.makeUnaryRequest(
        "/grpc.health.v1.Health/Check",
        (r: { service: string }) =>
          Buffer.from(
            toBinary(HealthCheckRequestSchema, {
              $typeName: "grpc.health.v1.HealthCheckRequest",
              service: r.service,
            }),
          ),
        (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
        { service: "" },
        { deadline: Date.now() + 2000 },
        (err: ServiceError | null, res) => {
          if (err !== null || res === undefined) resolve(`error: ${err?.details ?? "none"}`);
          else resolve(["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"][res.status] ?? "?");
        },
      );
    });
  }

  /** Cuts (or heals) every link into and out of `name`. */
  isolate(name: string, how: "reset" | "blackhole" = "reset"): void {
    for (const [key, proxy] of this.proxies) {
      const [from, to] = key.split(">");
      if (from === name || to === name) proxy.cut(how);
    }
  }

  healAll(): void {
    for (const proxy of this.proxies.values()) proxy.heal();
  }

  /** Ends every process (SIGCONT, then SIGKILL), client and proxy; removes the data directories. */
  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
    for (const h of this.health.values()) h.close();
    await Promise.all(
      [...this.members.values()].map(async (m) => {
        const child = m.child;
        if (child === undefined) return;
        if (child.exitCode === null && child.signalCode === null) {
          // A member paused by a test (SIGSTOP) is resumed first.
          child.kill("SIGCONT");
          child.kill("SIGKILL");
        }
        await exited(child);
      }),
    );
    for (const p of this.proxies.values()) await p.close();
    rmSync(this.root, { recursive: true, force: true });
  }
}
