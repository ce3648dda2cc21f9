/**
 * The deterministic simulation of a Raft group (issue 17, point 8): 3 or 5 nodes
 * (SimNode: RawNode + RaftLogStorage on a crash-clonable MemoryFileSystem + the KV state
 * machine), simulated clients, a simulated network, and a nemesis that crashes and
 * restarts nodes, partitions the network (isolating the leader, splitting the group,
 * cutting links one way), degrades links (loss, duplication, delay and reordering) and
 * disks (slow fsync), changes the membership (add a learner, promote it, remove a voter
 * or the leader, one at a time), transfers leadership and pauses nodes (a stalled process,
 * mostly the leader, that wakes up believing it still leads); snapshots and compaction run by
 * policy all along. One seeded PRNG drives everything and time is virtual, so a run is a
 * pure function of its options, which are a pure function of the seed.
 *
 * A step is one virtual millisecond: the events due in it run (timer ticks every
 * `tickMs`, message deliveries, disk completions, client actions), the nodes' pending
 * async work progresses, and every property of SafetyChecker is checked as the events
 * happen. The last part of a run is calm (faults healed, crashed nodes restarted): the
 * group must then elect a leader and commit again. At the end, the clients' history must
 * be linearizable (test/support/linearizability).
 */
import { isRaftError } from "../../../src/raft/errors.js";
import { RaftLogStorage } from "../../../src/raft/storage/raft-log-storage.js";
import type { ConfChangeType, NodeId } from "../../../src/raft/types.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { checkLinearizability, HistoryRecorder } from "../../support/linearizability/index.js";
import { randInt, rng } from "../../support/random.js";
import { type ClientOptions, type ClientReply, SimClient } from "./client.js";
import { KvStateMachine } from "./kv-state-machine.js";
import { CALM_LINKS, type LinkFaults, SimNetwork } from "./network.js";
import { SafetyChecker } from "./safety-checker.js";
import { Scheduler } from "./scheduler.js";
import {
  CRASH_POINTS,
  type NodeConfig,
  type NodeEnv,
  RAFT_DIR,
  SimNode,
  SM_DIR,
} from "./sim-node.js";

/** At most this many calm steps are added to a run that has not made progress yet. */
const LIVENESS_GRACE_STEPS = 3000;

export interface SimOptions {
  readonly seed: number;
  readonly nodes: number;
  readonly steps: number;
  readonly clients: number;
  readonly node: NodeConfig;
  readonly client: ClientOptions;
  /** Share of the steps during which the nemesis acts; the rest is calm. */
  readonly faultShare: number;
  /** Probability per step (ms) that the nemesis acts. */
  readonly nemesisRate: number;
  /** Nodes the run may add beyond the initial ones. */
  readonly maxAddedNodes: number;
  /** Probability that a new leader crashes within 15 ms of its election. */
  readonly youngLeaderDeathRate: number;
  /** Probability per leader Ready with entries that the leader is cut off before they leave. */
  readonly leaderCutOffRate: number;
}

/** The options of the run of `seed` (every choice derived from the seed), with overrides. */
export function simOptions(seed: number, overrides: Partial<SimOptions> = {}): SimOptions {
  const r = rng(seed ^ 0x51ab);
  const retention = [0, 0.5, 1][seed % 3]!;
  const node: NodeConfig = {
    tickMs: 5,
    electionTick: 10,
    heartbeatTick: 2,
    maxSizePerMsg: [64, 256, 4096][randInt(r, 3)]!,
    maxInflightMsgs: [1, 4, 64][randInt(r, 3)]!,
    // From the seed alone, so that the other draws of a seed stay what they were.
    deferCommitBroadcast: Math.floor(seed / 6) % 2 === 1,
    commitTellMs: Math.floor(seed / 12) % 2 === 1 ? 1 + (seed % 5) : undefined,
    retention,
    tornWriteProbability: 0.5,
    diskLatency: 1 + randInt(r, 4),
    slowDiskLatency: 20 + randInt(r, 60),
    applyDelay: randInt(r, 4),
    saveStateRate: 0.05,
    snapshotEvery: 10 + randInt(r, 60),
    snapshotBeforeAdvance: r() < 0.5,
    keepEntries: randInt(r, 8),
    snapshotChunkBytes: 32 + randInt(r, 200),
    streamBreakRate: 0.02,
    raftSegmentBytes: [512, 4096, 1 << 20][randInt(r, 3)]!,
  };
  return {
    seed,
    nodes: seed % 2 === 0 ? 3 : 5,
    steps: 2000,
    clients: 3 + randInt(r, 3),
    node,
    client: { keys: 2 + randInt(r, 3), attemptTimeout: 60, attempts: 5, thinkTime: 10 },
    faultShare: 0.75,
    nemesisRate: 0.02,
    maxAddedNodes: 3,
    youngLeaderDeathRate: 0.15,
    leaderCutOffRate: 0.01,
    ...overrides,
  };
}

export interface SimReport {
  readonly seed: number;
  readonly steps: number;
  readonly stats: Record<string, number>;
  /** A hash of the client history: equal runs give equal digests. */
  readonly historyDigest: number;
}

/** A run found a bug: the message says what, where, and how to replay it. */
export class SimulationFailure extends Error {
  override readonly name = "SimulationFailure";
}

const TRACE_LINES = 60;
/** The linearizability search's budget per run (a few seconds of search at most). */
const LIN_STEPS = 3_000_000;
/** KV_SIM_TRACE=1 prints every traced event as it happens; 2 adds every message sent. */
const TRACE = process.env["KV_SIM_TRACE"] === "1" || process.env["KV_SIM_TRACE"] === "2";

class Simulation {
  readonly scheduler = new Scheduler();
  readonly random: () => number;
  readonly network: SimNetwork;
  readonly checker = new SafetyChecker();
  readonly nodes = new Map<NodeId, SimNode>();
  readonly clients: SimClient[] = [];
  readonly recorder: HistoryRecorder;
  readonly #trace: string[] = [];
  readonly counters = {
    crashes: 0,
    partitions: 0,
    linkChanges: 0,
    transfers: 0,
    confChanges: 0,
    confChangesRefused: 0,
    pauses: 0,
  };
  #inFlight = 0;
  #failure: unknown;
  #running = true;
  #calmed = false;
  #nextId: number;
  readonly env: NodeEnv;

  constructor(readonly options: SimOptions) {
    this.random = rng(options.seed);
    this.network = new SimNetwork(this.scheduler, this.random);
    this.recorder = new HistoryRecorder(() => this.scheduler.stamp());
    this.#nextId = options.nodes + 1;
    this.env = {
      scheduler: this.scheduler,
      network: this.network,
      random: this.random,
      checker: this.checker,
      config: options.node,
      node: (id) => this.nodes.get(id),
      reply: (from, reply) => this.#reply(from, reply),
      crashed: (node) => this.#crashed(node),
      elected: (node) => this.#elected(node),
      appending: (node) => this.#appending(node),
      track: (work) => this.#track(work),
      trace: (line) => this.trace(line),
    };
  }

  trace(line: string): void {
    const t = this.#trace;
    if (t.length >= TRACE_LINES) t.shift();
    t.push(`${this.scheduler.now}ms ${line}`);
    if (TRACE) process.stderr.write(`${this.scheduler.now}ms ${line}\n`);
  }

  async run(): Promise<SimReport> {
    const o = this.options;
    const voters = Array.from({ length: o.nodes }, (_, i) => i + 1);
    this.checker.bootstrap(1, 1);
    for (const id of voters) {
      const disk = new MemoryFileSystem();
      await bootstrapDisk(disk, voters);
      this.nodes.set(id, new SimNode(id, disk, this.env));
    }
    for (const n of this.nodes.values()) n.start();
    for (let c = 0; c < o.clients; c++) {
      const client = new SimClient(1000 + c, this.#clientEnv(), o.client);
      this.clients.push(client);
      client.start();
    }
    const faultEnd = Math.floor(o.steps * o.faultShare);
    let commitAtCalm = 0;
    for (let step = 0; step < o.steps; step++) {
      this.scheduler.advanceTo(step);
      if (step < faultEnd) {
        if (this.random() < o.nemesisRate) this.#nemesis();
      } else if (step === faultEnd) {
        this.#calm();
        commitAtCalm = this.checker.commitIndex;
      }
      await this.#runDue();
    }
    // Liveness is "eventually", bounded: a run whose calm part ends before the group made
    // progress goes on, calm, for up to LIVENESS_GRACE_STEPS more steps (a follower may
    // still be rewriting a long divergent tail one small message per round trip).
    let step = o.steps;
    while (step < o.steps + LIVENESS_GRACE_STEPS && !this.#live(commitAtCalm)) {
      this.scheduler.advanceTo(step++);
      await this.#runDue();
    }
    this.#running = false;
    this.#checkLiveness(commitAtCalm, step - faultEnd);
    const history = this.recorder.operations();
    // A step budget, not a time budget, so that a seed's verdict never depends on the machine.
    const lin = checkLinearizability(history, { maxSteps: LIN_STEPS, timeoutMs: 600_000 });
    if (lin.verdict === "violation") {
      throw new Error(`Linearizability: ${lin.violation!.explanation}`);
    }
    if (lin.verdict === "unknown") {
      // The search finds a correct history's order at once; one it cannot settle within
      // the budget has almost always no order at all.
      throw new Error(
        `Linearizability: undecided within ${LIN_STEPS} search steps on keys ${lin.undecidedKeys.join(", ")}`,
      );
    }
    const stats = this.#stats(history.length);
    stats["linSteps"] = lin.steps;
    return {
      seed: o.seed,
      steps: o.steps,
      stats,
      historyDigest: digest(JSON.stringify(history)),
    };
  }

  /** A report of the failure `err` met at this point of the run. */
  failureReport(err: unknown): SimulationFailure {
    const o = this.options;
    const what = err instanceof Error ? (err.stack ?? err.message) : String(err);
    const nodes = [...this.nodes.values()]
      .map((n) => `n${n.id}:${n.status}${n.slowDisk ? "(slow disk)" : ""}`)
      .join(" ");
    return new SimulationFailure(
      [
        `simulation failed, seed ${o.seed}: ${what}`,
        `options: ${describeOptions(o)}`,
        `at ${this.scheduler.now} ms; nodes ${nodes}; cuts: ${this.network.describeCuts() || "none"}`,
        `group: ${this.checker.describe()}`,
        ...this.#describeCores(),
        "last events:",
        ...this.#trace.map((l) => `  ${l}`),
        `replay: KV_SEED=${o.seed} node --test dist/test/raft/simulation/simulation.test.js` +
          " (KV_SIM_TRACE=1 prints every event)",
      ].join("\n"),
    );
  }

  /** Each live core's own account (a leader's includes its peers' progress). */
  #describeCores(): string[] {
    const lines: string[] = [];
    for (const n of this.nodes.values()) {
      const st = n.raw?.status();
      if (st === undefined) continue;
      let line = `core n${n.id}: ${st.role} term ${st.term} lead ${st.lead} commit ${st.commit} applied ${st.applied} log ${st.firstIndex}..${st.lastIndex} voters ${st.config.voters} learners ${st.config.learners}`;
      if (st.repair !== undefined) line += ` repair through ${st.repair.throughIndex}`;
      for (const [id, p] of st.progress ?? []) {
        line += `\n    n${id}: ${p.state} match ${p.match} next ${p.next} active ${p.recentActive} paused ${p.paused} inflight ${p.inflightMessages}${p.pendingSnapshot ? ` snapshot ${p.pendingSnapshot}` : ""}`;
      }
      lines.push(line);
    }
    return lines;
  }

  // ---- the event loop ----

  async #runDue(): Promise<void> {
    let ran = false;
    for (;;) {
      let run = this.scheduler.nextDue();
      while (run !== undefined) {
        run();
        ran = true;
        this.#throwFailure();
        run = this.scheduler.nextDue();
      }
      if (!ran || this.#inFlight === 0) return;
      ran = false;
      // Let pending storage work (resolved disk waits) run to its next wait.
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.#throwFailure();
    }
  }

  #track(work: Promise<unknown>): void {
    this.#inFlight++;
    work.then(
      () => {
        this.#inFlight--;
      },
      (err: unknown) => {
        this.#inFlight--;
        this.#failure ??= err;
      },
    );
  }

  #throwFailure(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }

  // ---- clients ----

  #clientEnv() {
    return {
      scheduler: this.scheduler,
      network: this.network,
      random: this.random,
      recorder: this.recorder,
      targets: () =>
        [...this.nodes.values()].filter((n) => n.status !== "removed").map((n) => n.id),
      deliver: (to: number, request: Parameters<SimNode["receiveClientRequest"]>[0]) =>
        this.nodes.get(to)?.receiveClientRequest(request),
      running: () => this.#running,
    };
  }

  #reply(from: NodeId, reply: ClientReply): void {
    const client = this.clients[reply.client - 1000];
    if (client !== undefined) this.network.send(from, reply.client, () => client.receive(reply));
  }

  // ---- the nemesis ----

  #nemesis(): void {
    const roll = randInt(this.random, 15);
    if (roll < 3) this.#crashSomeNode();
    else if (roll < 6) this.#partition();
    else if (roll < 7) {
      this.network.heal();
      this.trace("heal");
    } else if (roll < 9) this.#changeLinks();
    else if (roll < 10) this.#toggleDisk();
    else if (roll < 11) this.#transferLeader();
    else if (roll < 12) this.#pause();
    else this.#changeMembership();
  }

  #up(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.status === "up");
  }

  #leader(): SimNode | undefined {
    return this.#up().find((n) => n.isLeader());
  }

  #pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[randInt(this.random, items.length)];
  }

  #crashSomeNode(): void {
    const alive = [...this.nodes.values()].filter(
      (n) => n.status === "up" || n.status === "starting",
    );
    const down = [...this.nodes.values()].filter((n) => n.status === "down").length;
    // Mostly a minority at a time; now and then everyone may go down.
    const limit = this.random() < 0.1 ? this.nodes.size : Math.floor((this.options.nodes - 1) / 2);
    if (down >= limit) return;
    const victim = this.random() < 0.4 ? (this.#leader() ?? this.#pick(alive)) : this.#pick(alive);
    if (victim === undefined) return;
    if (victim.status === "up" && this.random() < 0.5) {
      victim.crashPoint = this.#pick(CRASH_POINTS)!;
      this.trace(`n${victim.id} will crash at ${victim.crashPoint}`);
    } else {
      victim.crash();
    }
  }

  /**
   * Now and then a new leader dies young, within a few ms of its election: mid-way through
   * replicating its predecessors' entries (the Raft paper's Figure 8) and before its first
   * ReadIndex rounds settle.
   */
  #elected(node: SimNode): void {
    if (this.#calmed || this.random() >= this.options.youngLeaderDeathRate) return;
    const inc = node.incarnation;
    this.scheduler.after(1 + randInt(this.random, 15), () => {
      if (node.incarnation === inc && node.status === "up") {
        this.trace(`n${node.id} dies young`);
        node.crash();
      }
    });
  }

  /**
   * Now and then a leader is cut off just as it appends entries, before they leave: its
   * log then diverges from the one the next leader writes at the same indexes.
   */
  #appending(node: SimNode): void {
    if (this.#calmed || this.random() >= this.options.leaderCutOffRate) return;
    const others = [...this.nodes.keys()].filter((id) => id !== node.id);
    this.network.heal();
    this.network.partition([[node.id], others]);
    this.counters.partitions++;
    this.trace(`partition: leader n${node.id} isolated as it appends`);
    this.scheduler.after(20 + randInt(this.random, 200), () => {
      this.network.heal();
      this.trace("heal");
    });
  }

  /** A node crashed (now, or at its armed crash point): it comes back after a while. */
  #crashed(node: SimNode): void {
    this.counters.crashes++;
    // Mostly down for a while; sometimes a quick reboot, back within the same election.
    const downtime = this.#calmed
      ? 1
      : this.random() < 0.2
        ? 1 + randInt(this.random, 5)
        : 10 + randInt(this.random, 300);
    this.scheduler.after(downtime, () => {
      if (node.status === "down") node.start();
    });
  }

  #partition(): void {
    const ids = [...this.nodes.values()].filter((n) => n.status !== "removed").map((n) => n.id);
    const leader = this.#leader();
    const kind = randInt(this.random, 4);
    this.network.heal();
    if (kind === 0 && leader !== undefined) {
      this.network.partition([[leader.id], ids.filter((id) => id !== leader.id)]);
      this.trace(`partition: leader n${leader.id} isolated`);
    } else if (kind === 1) {
      const shuffled = shuffle(ids, this.random);
      const cut = 1 + randInt(this.random, Math.max(1, Math.floor(ids.length / 2)));
      const a = shuffled.slice(0, cut);
      this.network.partition([a, shuffled.slice(cut)]);
      this.trace(`partition: {${a}} | {${shuffled.slice(cut)}}`);
    } else if (kind === 2 && leader !== undefined) {
      // The leader's messages stop reaching some followers, theirs still reach it (or the reverse).
      const others = ids.filter((id) => id !== leader.id);
      const victims = shuffle(others, this.random).slice(
        0,
        1 + randInt(this.random, others.length),
      );
      const outbound = this.random() < 0.5;
      for (const v of victims) {
        if (outbound) this.network.cut(leader.id, v);
        else this.network.cut(v, leader.id);
      }
      this.trace(`one-way cut: n${leader.id} ${outbound ? "->" : "<-"} {${victims}}`);
    } else {
      const from = this.#pick(ids)!;
      const to = this.#pick(ids.filter((id) => id !== from));
      if (to === undefined) return;
      this.network.cut(from, to);
      this.trace(`one-way cut: n${from} -> n${to}`);
    }
    this.counters.partitions++;
    const duration = 20 + randInt(this.random, 400);
    this.scheduler.after(duration, () => {
      this.network.heal();
      this.trace("heal");
    });
  }

  #changeLinks(): void {
    const r = this.random;
    const kind = randInt(r, 4);
    let f: LinkFaults;
    if (kind === 0) f = { ...CALM_LINKS };
    else if (kind === 1) f = { ...CALM_LINKS, dropRate: 0.05 + 0.25 * r() };
    else if (kind === 2)
      f = { ...CALM_LINKS, duplicateRate: 0.05 + 0.2 * r(), slowRate: 0.1, slowDelay: 40 };
    else {
      f = {
        dropRate: 0.1 * r(),
        duplicateRate: 0.1 * r(),
        minDelay: 1,
        maxDelay: 2 + randInt(r, 15),
        slowRate: 0.2 * r(),
        slowDelay: 100,
      };
    }
    this.network.faults = f;
    this.counters.linkChanges++;
    this.trace(
      `links: drop ${f.dropRate.toFixed(2)} dup ${f.duplicateRate.toFixed(2)} delay ${f.minDelay}-${f.maxDelay} slow ${f.slowRate.toFixed(2)}/${f.slowDelay}`,
    );
  }

  /** Stalls a node (mostly the leader) for a while: a deposed leader wakes up believing it leads. */
  #pause(): void {
    const n = (this.random() < 0.7 ? this.#leader() : undefined) ?? this.#pick(this.#up());
    if (n === undefined) return;
    const ms = 20 + randInt(this.random, 300);
    n.pausedUntil = this.scheduler.now + ms;
    this.counters.pauses++;
    this.trace(`n${n.id} paused for ${ms} ms`);
  }

  #toggleDisk(): void {
    const n = this.#pick([...this.nodes.values()]);
    if (n === undefined) return;
    n.slowDisk = !n.slowDisk;
    this.trace(`n${n.id} disk ${n.slowDisk ? "slow" : "normal"}`);
  }

  #transferLeader(): void {
    const leader = this.#leader();
    const voters = leader?.confState?.voters.filter((id) => id !== leader.id) ?? [];
    const to = this.#pick(voters);
    if (leader === undefined || to === undefined) return;
    leader.raw!.transferLeader(to);
    leader.kick();
    this.counters.transfers++;
    this.trace(`transfer leadership n${leader.id} -> n${to}`);
  }

  #changeMembership(): void {
    const leader = this.#leader();
    const conf = leader?.confState;
    if (leader === undefined || conf === undefined) return;
    const r = this.random;
    const kind = randInt(r, 5);
    let type: ConfChangeType;
    let nodeId: NodeId | undefined;
    if (kind === 0 && this.#nextId <= this.options.nodes + this.options.maxAddedNodes) {
      nodeId = this.#nextId++;
      const node = new SimNode(nodeId, new MemoryFileSystem(), this.env);
      this.nodes.set(nodeId, node);
      node.start();
      type = "addLearner";
    } else if (kind === 1 && conf.learners.length > 0) {
      nodeId = this.#pick(conf.learners);
      type = "addVoter";
    } else if (kind === 2 && conf.voters.length > 3) {
      nodeId = this.#pick(conf.voters.filter((id) => id !== leader.id));
      type = "removeNode";
    } else if (kind === 3 && conf.voters.length > 3) {
      nodeId = leader.id;
      type = "removeNode";
    } else if (kind === 4 && conf.learners.length > 0) {
      nodeId = this.#pick(conf.learners);
      type = "removeNode";
    } else return;
    if (nodeId === undefined) return;
    try {
      leader.raw!.proposeConfChange({ type, nodeId, context: new Uint8Array(0) });
      this.counters.confChanges++;
      this.trace(`propose ${type} n${nodeId} at leader n${leader.id}`);
    } catch (err) {
      if (!isRaftError(err)) throw err;
      this.counters.confChangesRefused++;
      this.trace(`propose ${type} n${nodeId} refused: ${err.code}`);
    }
    leader.kick();
  }

  /** The calm part of the run: everything heals and every crashed node comes back. */
  #calm(): void {
    this.#calmed = true;
    this.network.heal();
    this.network.faults = { ...CALM_LINKS };
    for (const n of this.nodes.values()) {
      n.slowDisk = false;
      n.crashPoint = undefined;
      n.pausedUntil = 0;
      if (n.status === "down") n.start();
    }
    this.trace("calm: faults healed, crashed nodes restarting");
  }

  #live(commitAtCalm: number): boolean {
    return this.#leader() !== undefined && this.checker.commitIndex > commitAtCalm;
  }

  #checkLiveness(commitAtCalm: number, calmMs: number): void {
    if (calmMs < 300) return;
    if (this.#leader() === undefined) {
      throw new Error(`Liveness: no leader ${calmMs} ms after the faults stopped`);
    }
    if (this.checker.commitIndex <= commitAtCalm) {
      throw new Error(`Liveness: nothing committed in the ${calmMs} ms after the faults stopped`);
    }
  }

  #stats(operations: number): Record<string, number> {
    const s: Record<string, number> = { ...this.counters, ...this.checker.stats, operations };
    let ok = 0;
    let unknown = 0;
    for (const c of this.clients) {
      ok += c.stats.ok;
      unknown += c.stats.unknown;
    }
    s["opsOk"] = ok;
    s["opsUnknown"] = unknown;
    for (const n of this.nodes.values()) {
      for (const [k, v] of Object.entries(n.stats)) s[k] = (s[k] ?? 0) + v;
    }
    s["messages"] = this.network.stats.sent;
    return s;
  }
}

/** Writes the group's starting point on a fresh disk: a snapshot at index 1 naming the voters. */
async function bootstrapDisk(disk: MemoryFileSystem, voters: readonly NodeId[]): Promise<void> {
  const sm = new KvStateMachine();
  sm.applied = 1;
  sm.appliedTerm = 1;
  sm.confState = { voters: [...voters], learners: [] };
  const storage = await RaftLogStorage.open(disk, RAFT_DIR);
  await storage.save({
    snapshot: { metadata: { index: 1, term: 1, confState: sm.confState }, data: sm.serialize() },
  });
  await storage.close();
  await disk.mkdir(SM_DIR);
  await disk.syncDir("");
  await sm.save(disk, SM_DIR);
}

function digest(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = randInt(random, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function describeOptions(o: SimOptions): string {
  const n = o.node;
  return (
    `nodes=${o.nodes} steps=${o.steps} clients=${o.clients} keys=${o.client.keys} retention=${n.retention} ` +
    `torn=${n.tornWriteProbability} disk=1-${n.diskLatency}ms(slow 1-${n.slowDiskLatency}) ` +
    `maxSizePerMsg=${n.maxSizePerMsg} maxInflight=${n.maxInflightMsgs} snapshotEvery=${n.snapshotEvery} ` +
    `snapshotBeforeAdvance=${n.snapshotBeforeAdvance} ` +
    `keep=${n.keepEntries} chunk=${n.snapshotChunkBytes} segment=${n.raftSegmentBytes}`
  );
}

/** Runs the simulation of `options`; throws SimulationFailure (with the replay line) on any violation. */
export async function runSimulation(options: SimOptions): Promise<SimReport> {
  const sim = new Simulation(options);
  try {
    return await sim.run();
  } catch (err) {
    throw sim.failureReport(err);
  }
}
