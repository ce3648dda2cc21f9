/**
 * `raft_propose`: a 3-node Raft group in one process (RawNode over RaftLogStorage on the
 * real file system, one directory per node, preallocated segments), nodes linked by an
 * in-memory transport that passes every message through the codec. The leader proposes
 * 100-byte entries, one at a time, then 64 in flight, and measures per mode:
 *
 * - commits/s, and commit latency (from `propose` to the leader applying the entry);
 * - the leader's time inside the core per committed entry: its RawNode calls (tick, step,
 *   propose, hasReady, ready, takeMessages, advance) timed with process.hrtime (Node 20
 *   has no per-thread CPU clock, so this is wall time inside the calls: storage, fsync and
 *   transport excluded);
 * - fdatasyncs per node per Ready (counted by a FaultInjectingFileSystem around each
 *   node's RealFileSystem, injecting nothing): at most 1 by construction of the storage;
 * - entries per leader Ready (how much the Ready cycle batches).
 *
 * Each node runs the application loop of docs/raft.md: `ready()`, send `messages`, persist
 * with one `save`, send `messagesAfterPersist`, apply, `advance()`; while a save is in
 * flight it keeps stepping messages and sends `takeMessages()` at once.
 */
import { join } from "node:path";
import { decodeMessage, encodeMessage } from "../../src/raft/codec.js";
import { isRaftError } from "../../src/raft/errors.js";
import { RawNode } from "../../src/raft/raw-node.js";
import { RaftLogStorage } from "../../src/raft/storage/index.js";
import type { Entry, Message, NodeId } from "../../src/raft/types.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import type { LimitScenario } from "./scenario.js";

export const RAFT_ONE_IN_FLIGHT = "1 in flight";
export const RAFT_64_IN_FLIGHT = "64 in flight";
/** `Measurement.values` keys. */
export const RAFT_CORE_US = "leaderCoreUsPerEntry";
export const RAFT_FSYNCS_PER_READY = "maxFsyncsPerNodePerReady";
export const RAFT_ENTRIES_PER_READY = "entriesPerLeaderReady";

const VOTERS: readonly NodeId[] = [1, 2, 3];
const PAYLOAD = 100;
const TICK_MS = 50;

class BenchNode {
  readonly id: NodeId;
  raw!: RawNode;
  storage!: RaftLogStorage;
  readonly fs: FaultInjectingFileSystem;
  /** Nanoseconds spent inside this node's RawNode calls. */
  coreNs = 0;
  /** Readies persisted. */
  readies = 0;
  /** Entries this node applied (committed entries handed out). */
  applied = 0;
  onApply: ((e: Entry) => void) | undefined;
  private persisting = false;
  private scheduled = false;

  constructor(
    id: NodeId,
    private readonly net: Map<NodeId, BenchNode>,
  ) {
    this.id = id;
    this.fs = new FaultInjectingFileSystem(new RealFileSystem());
  }

  async start(dir: string): Promise<void> {
    this.storage = await RaftLogStorage.open(this.fs, dir, { preallocateBytes: 1024 * 1024 });
    if (
      this.storage.lastIndex() === 0 &&
      this.storage.snapshot().metadata.confState.voters.length === 0
    ) {
      await this.storage.save({
        snapshot: {
          metadata: { index: 0, term: 0, confState: { voters: [...VOTERS], learners: [] } },
          data: new Uint8Array(0),
        },
      });
    }
    this.raw = new RawNode({
      id: this.id,
      storage: this.storage,
      electionTick: 20,
      heartbeatTick: 2,
      seed: this.id,
    });
  }

  private timed<T>(f: () => T): T {
    const t0 = nowNs();
    try {
      return f();
    } finally {
      this.coreNs += nowNs() - t0;
    }
  }

  tick(): void {
    this.timed(() => this.raw.tick());
    this.kick();
  }

  campaign(): void {
    this.timed(() => this.raw.campaign());
    this.kick();
  }

  propose(data: Uint8Array): void {
    this.timed(() => this.raw.propose(data));
    this.kick();
  }

  step(m: Message): void {
    try {
      this.timed(() => this.raw.step(m));
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
    this.kick();
  }

  isLeader(): boolean {
    return this.raw.status().role === "leader";
  }

  /** Processes once the current macrotask's messages have been stepped (batching them). */
  private kick(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.process();
    });
  }

  private process(): void {
    if (this.persisting) {
      this.send(this.timed(() => this.raw.takeMessages()));
      return;
    }
    if (!this.timed(() => this.raw.hasReady())) return;
    const rd = this.timed(() => this.raw.ready());
    this.send(rd.messages);
    this.persisting = true;
    this.storage.save(rd).then(
      () => {
        this.send(rd.messagesAfterPersist);
        for (const e of rd.committedEntries) {
          this.applied++;
          this.onApply?.(e);
        }
        this.timed(() => this.raw.advance());
        this.readies++;
        this.persisting = false;
        this.kick();
      },
      (err: unknown) => {
        process.exitCode = 1;
        console.error(`raft_propose: node ${this.id} failed to persist: ${String(err)}`);
      },
    );
  }

  private send(msgs: readonly Message[]): void {
    for (const m of msgs) {
      const target = this.net.get(m.to);
      if (target === undefined) continue;
      const bytes = encodeMessage(m);
      queueMicrotask(() => target.step(decodeMessage(bytes)));
    }
  }
}

function until(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = () => {
      if (cond()) resolve();
      else if (Date.now() > deadline)
        reject(new Error(`raft_propose: timed out waiting for ${what}`));
      else setTimeout(check, 5);
    };
    check();
  });
}

/** One mode: a fresh group in `dir`, `n` measured proposals with `inFlight` outstanding. */
async function runMode(
  dir: string,
  n: number,
  inFlight: number,
  label: string,
): Promise<Measurement> {
  const net = new Map<NodeId, BenchNode>();
  const nodes = VOTERS.map((id) => new BenchNode(id, net));
  for (const node of nodes) {
    net.set(node.id, node);
    await node.start(join(dir, `node-${node.id}`));
  }
  const ticker = setInterval(() => {
    for (const node of nodes) node.tick();
  }, TICK_MS);
  try {
    const leader = nodes[0]!;
    leader.campaign();
    await until(() => leader.isLeader() && leader.applied >= 1, "an elected leader");

    const warmup = Math.min(200, Math.ceil(n / 10));
    const total = warmup + n;
    const started = new Float64Array(total);
    const latencies = new Float64Array(n);
    let issued = 0;
    let committed = 0;
    let base = { core: 0, fsyncs: [0, 0, 0], readies: [0, 0, 0], leaderEntries: 0 };
    let t0 = 0;
    const snapshotCounters = () => ({
      core: leader.coreNs,
      fsyncs: nodes.map((x) => x.fs.count("datasync") + x.fs.count("sync")),
      readies: nodes.map((x) => x.readies),
      leaderEntries: leader.applied,
    });
    const data = (id: number): Uint8Array => {
      const d = new Uint8Array(PAYLOAD);
      new DataView(d.buffer).setUint32(0, id + 1, true);
      for (let i = 4; i < PAYLOAD; i++) d[i] = (id * 31 + i) & 0xff;
      return d;
    };
    await new Promise<void>((resolve, reject) => {
      const issue = () => {
        while (issued < total && issued - committed < inFlight) {
          started[issued] = nowNs();
          try {
            leader.propose(data(issued));
          } catch (err) {
            reject(err);
            return;
          }
          issued++;
        }
      };
      leader.onApply = (e) => {
        if (e.data.length !== PAYLOAD) return;
        const id = new DataView(e.data.buffer, e.data.byteOffset).getUint32(0, true) - 1;
        const now = nowNs();
        if (id >= warmup) latencies[id - warmup] = now - started[id]!;
        committed++;
        if (committed === warmup) {
          base = snapshotCounters();
          t0 = now;
        }
        if (committed === total) resolve();
        else issue();
      };
      issue();
    });
    const seconds = (nowNs() - t0) / 1e9;
    const end = snapshotCounters();
    const fsyncsPerReady = nodes.map((_, i) => {
      const readies = end.readies[i]! - base.readies[i]!;
      return readies === 0 ? 0 : (end.fsyncs[i]! - base.fsyncs[i]!) / readies;
    });
    const leaderReadies = end.readies[0]! - base.readies[0]!;
    const coreUs = (end.core - base.core) / 1e3 / n;
    const maxFsyncs = Math.max(...fsyncsPerReady);
    const perReady =
      leaderReadies === 0 ? 0 : (end.leaderEntries - base.leaderEntries) / leaderReadies;
    return {
      label,
      ops: n,
      seconds,
      opsPerSec: n / seconds,
      latency: summarize(latencies),
      description:
        `${PAYLOAD}-byte proposals, 3 nodes; leader in core ${coreUs.toFixed(2)} µs/entry; ` +
        `fdatasyncs per node per Ready ${fsyncsPerReady.map((f) => f.toFixed(2)).join(" / ")}; ` +
        `${perReady.toFixed(1)} entries per leader Ready`,
      values: {
        [RAFT_CORE_US]: coreUs,
        [RAFT_FSYNCS_PER_READY]: maxFsyncs,
        [RAFT_ENTRIES_PER_READY]: perReady,
      },
    };
  } finally {
    clearInterval(ticker);
    for (const node of nodes) {
      node.onApply = undefined;
      await node.storage.close().catch(() => {});
    }
  }
}

export const raftPropose: LimitScenario = {
  kind: "limit",
  name: "raft_propose",
  title: "Raft: 3 in-process nodes, durable logs on disk, 100-byte proposals",
  defaultN: (quick) => (quick ? 500 : 3000),
  sizeLine: (n) => `n = ${n} committed proposals per mode (after a warm-up)`,
  async run({ dir, n }) {
    const rows: Measurement[] = [];
    rows.push(await runMode(join(dir, "one"), n, 1, RAFT_ONE_IN_FLIGHT));
    rows.push(await runMode(join(dir, "many"), n, 64, RAFT_64_IN_FLIGHT));
    return { rows };
  },
};
