/**
 * A seeded nemesis for a ProcessCluster with a TCP proxy per directed peer link: one fault
 * at a time, held for a while, then undone, with quiet time between faults:
 *
 * - `kill`: SIGKILL of a member (the leader with probability 0.7), restarted from its
 *   data in the background once the fault's time is up, while the next faults go on
 *   (with `maxDown` > 1, sometimes two members at once; never more than `maxDown`
 *   members down or paused);
 * - `pause`: SIGSTOP of a member (the leader with probability 0.5), SIGCONT at the end;
 * - `isolate`: every link into and out of the leader cut (reset or blackhole);
 * - `split`: a random minority cut off from the majority, both ways;
 * - `one-way`: every link into a member blackholed while it still sends (it hears no one),
 *   or one directed link cut;
 * - `slow`: every link out of the leader delayed.
 *
 * The schedule (which fault, how long, leader or not) is drawn from one PRNG, so the same
 * seed replays the same schedule; which member is the leader at each step depends on the
 * run. `log` lists what was done, with times, for failure messages. Contract: `run(stop)`
 * once; it resolves after undoing its last fault, `healAll()` and every restart (and
 * rejects if a restart failed); `cleanup()` (also safe
 * after a failure) sends SIGCONT to every paused member, so that it can be killed.
 */
import type { KvClient } from "../../src/client/kv-client.js";
import type { ProcessCluster } from "./cluster-processes.js";
import { randInt } from "./random.js";

export type FaultKind = "kill" | "pause" | "isolate" | "split" | "one-way" | "slow";

export const FAULT_KINDS: readonly FaultKind[] = [
  "kill",
  "pause",
  "isolate",
  "split",
  "one-way",
  "slow",
];

export interface NemesisOptions {
  readonly random: () => number;
  /** Members the nemesis may act on (default: every member of the cluster). */
  readonly names?: readonly string[];
  /** Most members down or paused at once (default: 1). */
  readonly maxDown?: number;
  /** Milliseconds a fault is held: [min, max) (default [500, 2000)). */
  readonly holdMs?: readonly [number, number];
  /** Milliseconds of quiet between faults: [min, max) (default [300, 1000)). */
  readonly quietMs?: readonly [number, number];
  /** Kinds drawn from (default: all). */
  readonly kinds?: readonly FaultKind[];
}

export class Nemesis {
  readonly log: string[] = [];
  readonly counts = new Map<FaultKind, number>();
  private readonly paused = new Set<string>();
  private readonly down = new Set<string>();
  private readonly restarts = new Set<Promise<void>>();
  private failure: unknown;
  private readonly started = Date.now();
  private readonly status: KvClient;

  constructor(
    private readonly cluster: ProcessCluster,
    private readonly o: NemesisOptions,
  ) {
    this.status = cluster.client(undefined, 1000);
  }

  private get names(): readonly string[] {
    return this.o.names ?? [...this.cluster.members.keys()];
  }

  /**
   * Members running, not paused and not down: a killed member counts as down until its
   * restart is listening (a kill while it starts would fail that restart).
   */
  live(): string[] {
    return this.names.filter(
      (n) => this.cluster.running(n) && !this.paused.has(n) && !this.down.has(n),
    );
  }

  /** The member a live member says leads (the one of the highest term), or undefined. */
  async leader(): Promise<string | undefined> {
    const live = this.live();
    const statuses = await Promise.all(
      live.map((n) =>
        this.status.status(this.cluster.member(n).clientAddress, { timeoutMs: 1000 }).then(
          (s) => ({ n, s }),
          () => undefined,
        ),
      ),
    );
    let best: { n: string; term: number } | undefined;
    for (const x of statuses) {
      if (x === undefined || x.s.role !== "leader") continue;
      if (best === undefined || x.s.term > best.term) best = { n: x.n, term: x.s.term };
    }
    return best?.n;
  }

  private note(text: string): void {
    this.log.push(`+${((Date.now() - this.started) / 1000).toFixed(2)}s ${text}`);
  }

  private between(range: readonly [number, number]): number {
    return range[0] + randInt(this.o.random, Math.max(1, range[1] - range[0]));
  }

  /** Runs faults until `stop()`; every fault is undone before it resolves. */
  async run(stop: () => boolean): Promise<void> {
    const r = this.o.random;
    const kinds = this.o.kinds ?? FAULT_KINDS;
    try {
      while (!stop()) {
        await sleep(this.between(this.o.quietMs ?? [300, 1000]));
        if (stop()) break;
        const kind = kinds[randInt(r, kinds.length)]!;
        const hold = this.between(this.o.holdMs ?? [500, 2000]);
        // Drawn whether used or not, so that the schedule does not depend on the run.
        const preferLeader = r();
        const pick = r();
        const how = r() < 0.5 ? "reset" : "blackhole";
        const leader = await this.leader();
        const live = this.live();
        const target =
          leader !== undefined && preferLeader < (kind === "kill" ? 0.7 : 0.5)
            ? leader
            : live[Math.floor(pick * live.length)];
        this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
        await this.fault(kind, target, leader, how, hold, pick);
      }
    } finally {
      this.cluster.healAll();
      for (const p of this.cluster.proxies.values()) p.delay(0);
      while (this.restarts.size > 0) await Promise.allSettled([...this.restarts]);
      this.note("healed");
    }
    if (this.failure !== undefined) throw this.failure;
  }

  private async fault(
    kind: FaultKind,
    target: string | undefined,
    leader: string | undefined,
    how: "reset" | "blackhole",
    hold: number,
    pick: number,
  ): Promise<void> {
    const c = this.cluster;
    switch (kind) {
      case "kill": {
        if (target === undefined) return;
        const victims = [target];
        const maxDown = this.o.maxDown ?? 1;
        const others = this.live().filter((n) => n !== target);
        if (maxDown > 1 && pick < 0.3 && others.length > 0) {
          victims.push(others[Math.floor(pick * others.length)]!);
        }
        if (this.down.size + this.paused.size + victims.length > maxDown) {
          this.note(`kill of ${victims.join(", ")} skipped: ${[...this.down].join(", ")} down`);
          return;
        }
        this.note(`kill -9 ${victims.join(", ")}${target === leader ? " (leader)" : ""}`);
        for (const v of victims) this.down.add(v);
        await Promise.all(victims.map((v) => c.signal(v, "SIGKILL")));
        // Restarted in the background: the next faults go on meanwhile.
        const restart = (async () => {
          await sleep(hold);
          for (const v of victims) {
            await c.startMember(v);
            this.down.delete(v);
            this.note(`restarted ${v}`);
          }
        })();
        this.restarts.add(restart);
        restart.then(
          () => this.restarts.delete(restart),
          (err: unknown) => {
            this.restarts.delete(restart);
            this.failure ??= err;
          },
        );
        return;
      }
      case "pause": {
        if (target === undefined) return;
        const child = c.member(target).child;
        if (child === undefined) return;
        if (this.down.size + this.paused.size + 1 > (this.o.maxDown ?? 1)) {
          this.note(`pause of ${target} skipped: ${[...this.down].join(", ")} down`);
          return;
        }
        this.note(`SIGSTOP ${target}${target === leader ? " (leader)" : ""} for ${hold} ms`);
        this.paused.add(target);
        child.kill("SIGSTOP");
        await sleep(hold);
        child.kill("SIGCONT");
        this.paused.delete(target);
        this.note(`SIGCONT ${target}`);
        return;
      }
      case "isolate": {
        if (leader === undefined) return;
        this.note(`isolate leader ${leader} (${how}) for ${hold} ms`);
        c.isolate(leader, how);
        break;
      }
      case "split": {
        const names = [...this.names];
        // A random minority: 1 of 3, 1 or 2 of 5.
        const minority = 1 + Math.floor(pick * Math.floor((names.length - 1) / 2));
        const order = [...names].sort((a, b) => hashOf(a, pick) - hashOf(b, pick));
        const small = new Set(order.slice(0, minority));
        this.note(`split {${[...small].join(",")}} | rest (${how}) for ${hold} ms`);
        for (const [key, proxy] of c.proxies) {
          const [from, to] = key.split(">");
          if (small.has(from!) !== small.has(to!)) proxy.cut(how);
        }
        break;
      }
      case "one-way": {
        if (target === undefined) return;
        if (pick < 0.5) {
          this.note(`one-way: nothing reaches ${target} for ${hold} ms`);
          for (const [key, proxy] of c.proxies)
            if (key.endsWith(`>${target}`)) proxy.cut("blackhole");
        } else {
          const to = this.names.filter((n) => n !== target);
          const dest = to[Math.floor(pick * to.length)]!;
          this.note(`one-way: link ${target}>${dest} cut (${how}) for ${hold} ms`);
          c.proxies.get(`${target}>${dest}`)?.cut(how);
        }
        break;
      }
      case "slow": {
        if (leader === undefined) return;
        const ms = 20 + Math.floor(pick * 200);
        this.note(`links out of leader ${leader} delayed ${ms} ms for ${hold} ms`);
        for (const [key, proxy] of c.proxies) if (key.startsWith(`${leader}>`)) proxy.delay(ms);
        break;
      }
    }
    await sleep(hold);
    c.healAll();
    for (const p of c.proxies.values()) p.delay(0);
    this.note("heal");
  }

  /** Resumes every member it paused (a stopped process must run again to be ended cleanly). */
  cleanup(): void {
    for (const n of this.paused) this.cluster.member(n).child?.kill("SIGCONT");
    this.paused.clear();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A deterministic shuffle key of `name` for draw `pick`. */
function hashOf(name: string, pick: number): number {
  let h = Math.floor(pick * 2 ** 31);
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
  return h;
}
