/**
 * A benchmarked cluster: three members of kv-engine (`kv-engine serve` in cluster mode)
 * or of etcd, each a child process on 127.0.0.1 with a fresh data directory under the
 * run's directory, started with the system's default timeouts, durable. Both kinds offer
 * the same handle, so that every cluster scenario drives them with the same code:
 * member status (role, term, applied index), kill -9, restart with the same flags, a new
 * member joining, and a client per member for the untimed work (loading, probes).
 *
 * Member processes are children of the benchmark's worker, in its process group, which
 * the harness kills after every run: nothing outlives a run even when it fails.
 * `stop()` ends them (SIGKILL: nothing is measured after it) and waits for their exit.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

export type ClusterKind = "kv-engine" | "etcd";

/** One member's view of the cluster (Status). */
export interface MemberState {
  name: string;
  role: string;
  term: number;
  /** The leader's member name, "" when this member knows none. */
  leader: string;
  appliedIndex: number;
}

/** The operations the cluster scenarios need from a client of one member. */
export interface MemberClient {
  put(key: Uint8Array, value: Uint8Array, timeoutMs?: number): Promise<void>;
  /** Puts every pair in one atomic batch (one Raft entry). */
  putBatch(keys: readonly Uint8Array[], values: readonly Uint8Array[]): Promise<void>;
  get(key: Uint8Array, timeoutMs?: number): Promise<Uint8Array | undefined>;
  close(): void;
}

export interface BenchCluster {
  readonly kind: ClusterKind;
  /** Member names in start order (n1, n2, n3, then added ones). */
  names(): string[];
  clientAddress(name: string): string;
  running(name: string): boolean;
  /** ClusterService.Status (kv-engine) or Maintenance.Status (etcd) of one member. */
  state(name: string, timeoutMs?: number): Promise<MemberState>;
  /** A client of member `name` (cached; closed by stop). */
  client(name: string): MemberClient;
  /**
   * The client a user of this system runs (kv-engine: KvClient over every member's
   * address, `timeoutMs` per call, its retries and client session); absent where the
   * bench has none. A new one per call; the caller closes it.
   */
  userClient?(timeoutMs: number): MemberClient;
  /** SIGKILL; resolves once the process exited. */
  kill(name: string): Promise<void>;
  /** SIGSTOP (`paused`) or SIGCONT to a running member. */
  pause(name: string, paused: boolean): void;
  /** Starts a stopped member again with its flags and data; resolves once it serves. */
  restart(name: string): Promise<void>;
  /**
   * Adds a new member `name` (member add, then a process started to join the running
   * cluster with an empty data directory); resolves once the add was accepted and the
   * process started, with the time (`nowNs()`, bench/lib/stats.ts) at which the accepted
   * member add was sent (etcd refuses adds to a cluster whose members have not all been
   * connected for 5 s: those refusals are retried, not timed).
   */
  add(name: string): Promise<number>;
  /**
   * CPU seconds (user + system, all threads) the running members' processes have used
   * since they started (/proc/<pid>/stat; 0 where unreadable).
   */
  cpuSeconds(): number;
  /** Ends every member; removes nothing (the harness deletes the run's directory). */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound to 0, then released). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

/** Bytes of a member's stderr kept for error messages. */
const STDERR_KEEP = 4096;

/** A member's process and what it was started with. */
export class MemberProcess {
  child: ChildProcess | undefined;
  private err = "";

  constructor(
    readonly name: string,
    readonly command: string,
    readonly args: string[],
    readonly clientAddress: string,
    readonly peerAddress: string,
  ) {}

  /** Starts the process; `ready` resolves once it serves (the kind's own check). */
  spawn(): ChildProcess {
    const child = spawn(this.command, this.args, { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.err = (this.err + chunk).slice(-STDERR_KEEP);
    });
    return child;
  }

  running(): boolean {
    const c = this.child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  stderr(): string {
    return this.err.trim();
  }

  /** SIGSTOP (`paused`) or SIGCONT; nothing when the process is not running. */
  pause(paused: boolean): void {
    if (this.running()) this.child?.kill(paused ? "SIGSTOP" : "SIGCONT");
  }

  /** CPU seconds of the running process (user + system, all threads), 0 if unknown. */
  cpuSeconds(): number {
    const pid = this.child?.pid;
    if (pid === undefined || !this.running()) return 0;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
    } catch {
      return 0;
    }
  }

  async kill(): Promise<void> {
    const c = this.child;
    if (c === undefined || !this.running()) return;
    const gone = new Promise<void>((resolve) => c.once("exit", () => resolve()));
    c.kill("SIGKILL");
    await gone;
  }
}

/** Polls `check` every `everyMs` until it returns true; rejects after `timeoutMs`. */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs: number,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last === undefined ? "" : ` (last error: ${String(last)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The leader's name once every running member names the same running one; rejects after
 * `timeoutMs`.
 */
export async function settledLeader(cluster: BenchCluster, timeoutMs = 30_000): Promise<string> {
  let leader = "";
  await waitUntil(
    async () => {
      const running = cluster.names().filter((n) => cluster.running(n));
      const states = await Promise.all(running.map((n) => cluster.state(n, 1000)));
      const first = states[0]?.leader ?? "";
      leader = first;
      return running.includes(first) && states.every((s) => s.leader === first);
    },
    `${cluster.kind}: one leader known to every running member`,
    timeoutMs,
  );
  return leader;
}
