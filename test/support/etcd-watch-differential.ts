/**
 * The differential harness of etcd's Watch (issue 29 point 6), over etcd-differential.ts's
 * KV sequences: a group of seeded sequences runs against etcd and kv-engine as there, and
 * at random steps both are sent the same watch create (a key or range of the sequence,
 * a start revision of 0, in its past, below the compacted revision or in the future,
 * prev_kv, a filter) on one stream each. At the group's end, once every watcher on both
 * sides reported progress at the last revision (per-watcher progress notifications are
 * ordered with its events in etcd 3.4 as here), each watcher's created answer and events
 * (revision, type, key, value, prev_kv, create/mod revision, version, and a compacted
 * cancel) are compared. Events of one revision are compared in key order (etcd sends a
 * txn's in the order it wrote them: docs/etcd.md). Compactions happen only at the start
 * of a group, before its watchers exist: a watcher still catching up when a compaction
 * passes it is canceled or not depending on timing, in etcd as here.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  WatchCreateRequestSchema,
  WatchResponse,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  type Difference,
  type DiffOp,
  Gen,
  type Knowledge,
  revisionOf,
  send,
  show,
} from "./etcd-differential.js";
import type { EtcdGrpcClient } from "./etcd-grpc-client.js";
import type { EtcdWatchClient } from "./etcd-watch-client.js";
import { rng } from "./random.js";

export interface WatchSide {
  readonly kv: EtcdGrpcClient;
  /** One stream for the whole run (watch IDs continue across groups alike on both sides). */
  readonly watch: EtcdWatchClient;
}

type CreateInit = MessageInitShape<typeof WatchCreateRequestSchema>;

/** One side's view of its watchers, fed from its stream. */
class Tracker {
  /** Per watcher created in this group, in creation order: its log. */
  readonly logs: string[][] = [];
  /** The watch ID of each (-1: refused). */
  readonly ids: bigint[] = [];
  private readonly byId = new Map<bigint, number>();
  private readonly progress = new Map<bigint, number>();
  private readonly ended = new Set<bigint>();
  private createdSeen = 0;

  constructor(private readonly side: WatchSide) {}

  /** Takes what the stream received. */
  pump(): void {
    for (const r of this.side.watch.take()) this.onResponse(r);
  }

  private onResponse(r: WatchResponse): void {
    if (r.created) {
      const i = this.createdSeen++;
      this.ids[i] = r.watchId;
      this.logs[i] = [`created canceled=${r.canceled} reason=${r.cancelReason}`];
      if (!r.canceled) this.byId.set(r.watchId, i);
      return;
    }
    const i = this.byId.get(r.watchId);
    if (i === undefined) return; // a watcher of an earlier group
    const log = this.logs[i]!;
    if (r.canceled) {
      log.push(`canceled compact=${r.compactRevision}`);
      this.ended.add(r.watchId);
      return;
    }
    if (r.events.length === 0) {
      this.progress.set(r.watchId, Number(r.header?.revision ?? 0n));
      return;
    }
    const events = r.events.map((e) => ({
      rev: Number(e.kv?.modRevision ?? 0n),
      key: Buffer.from(e.kv?.key ?? []).toString("latin1"),
      text: show(e),
    }));
    log.push(...events.map((e) => `${e.rev} ${e.key} ${e.text}`));
  }

  /** True once `n` created answers came. */
  created(n: number): boolean {
    this.pump();
    return this.createdSeen >= n;
  }

  /** True once the created answers came and each live watcher reported progress >= `rev`. */
  settled(created: number, rev: number, starts: readonly number[]): boolean {
    this.pump();
    if (this.createdSeen < created) return false;
    for (let i = 0; i < created; i++) {
      const id = this.ids[i]!;
      if (id === -1n || this.ended.has(id)) continue;
      if ((starts[i] ?? 0) > rev) continue; // waits for a future revision: no events yet
      if ((this.progress.get(id) ?? 0) < rev) return false;
    }
    return true;
  }

  /** Each watcher's log, its events of one revision sorted by key. */
  normalized(): string[] {
    return this.logs.map((log) => {
      const [head, ...rest] = log;
      const sorted = [...rest].sort((a, b) => {
        const [ra, ka] = a.split(" ");
        const [rb, kb] = b.split(" ");
        if (ra === "canceled" || rb === "canceled") return 0;
        return Number(ra) - Number(rb) || (ka! < kb! ? -1 : ka! > kb! ? 1 : 0);
      });
      return [head, ...sorted].join("\n");
    });
  }

  /** Cancels this group's live watchers and forgets them. */
  reset(): void {
    for (const [id] of this.byId) if (!this.ended.has(id)) this.side.watch.cancel(id);
    this.logs.length = 0;
    this.ids.length = 0;
    this.byId.clear();
    this.progress.clear();
    this.ended.clear();
    this.createdSeen = 0;
  }
}

export interface WatchGroupOptions {
  /** KV ops per sequence. */
  readonly length: number;
  /** How long to wait for both sides' progress at the end (ms). */
  readonly settleMs: number;
  /** Counts the watchers compared by outcome. */
  readonly tally?: Map<string, number>;
}

/**
 * Runs the sequences `seeds` as one group with watchers on both sides; returns the first
 * difference (a KV answer, or a watcher's log), undefined when none.
 */
export async function runWatchGroup(
  seeds: readonly number[],
  reference: WatchSide,
  ours: WatchSide,
  options: WatchGroupOptions,
): Promise<Difference | undefined> {
  const group = seeds[0] ?? 0;
  const a = new Tracker(reference);
  const b = new Tracker(ours);
  const starts: number[] = [];
  const creates: string[] = [];
  let last = 0;
  const both = async (op: DiffOp, seed: number, step: number) => {
    const [x, y] = await Promise.all([send(reference.kv, op), send(ours.kv, op)]);
    const sx = show(x);
    const sy = show(y);
    if (sx !== sy) return { seed, step, op: show(op), reference: sx, ours: sy };
    last = revisionOf(x) ?? last;
    return undefined;
  };
  // A compaction before the group's watchers: some of them start below it.
  const r = rng(group ^ 0x5eed);
  const probe = await send(reference.kv, { kind: "range", req: { key: Buffer.from("w") } });
  last = revisionOf(probe) ?? 0;
  if (last > 12 && r() < 0.6) {
    const d = await both(
      { kind: "compact", req: { revision: BigInt(last - 1 - Math.floor(r() * 10)) } },
      group,
      -1,
    );
    if (d !== undefined) return d;
  }
  for (const seed of seeds) {
    const prefix = `w${seed}/`;
    const k: Knowledge = { base: last, current: last, compacted: false };
    const g = new Gen(rng(seed), prefix, k, true);
    const wr = rng(seed ^ 0x77a7c4);
    const cleanup: DiffOp = {
      kind: "delete",
      req: { key: Buffer.from(prefix), rangeEnd: Buffer.from(`${prefix.slice(0, -1)}0`) },
    };
    for (let step = 0; step <= options.length; step++) {
      if (step < options.length && wr() < 0.2) {
        const key = g.key();
        const req: CreateInit = {
          key,
          rangeEnd: g.rangeEnd(key),
          progressNotify: true,
          prevKv: wr() < 0.5,
        };
        const from = wr();
        if (from < 0.35) req.startRevision = 0n;
        else if (from < 0.45) req.startRevision = BigInt(Math.max(1, last - 30));
        else {
          const at = g.revision();
          req.startRevision = at < 1n ? 1n : at;
        }
        if (wr() < 0.2) req.filters = [wr() < 0.5 ? 0 : 1];
        reference.watch.create(req);
        ours.watch.create(req);
        starts.push(Number(req.startRevision ?? 0n));
        creates.push(`seed ${seed} step ${step}: ${show(req)}`);
        // "From now" is when the create is handled: the next op waits for it on both.
        const until = Date.now() + options.settleMs;
        while (!(a.created(creates.length) && b.created(creates.length))) {
          if (Date.now() > until) throw new Error(`no created answer: ${creates.at(-1)}`);
          await new Promise((res) => setTimeout(res, 1));
        }
      }
      const op = step < options.length ? g.op() : cleanup;
      const d = await both(op, seed, step);
      if (d !== undefined) return d;
      k.current = last;
    }
  }
  const until = Date.now() + options.settleMs;
  while (!(a.settled(creates.length, last, starts) && b.settled(creates.length, last, starts))) {
    if (Date.now() > until) {
      return {
        seed: group,
        step: -1,
        op: `settling the group's ${creates.length} watchers at revision ${last}`,
        reference: `settled: ${a.settled(creates.length, last, starts)}`,
        ours: `settled: ${b.settled(creates.length, last, starts)}`,
      };
    }
    await new Promise((res) => setTimeout(res, 10));
  }
  const na = a.normalized();
  const nb = b.normalized();
  for (let i = 0; i < creates.length; i++) {
    if (na[i] !== nb[i]) {
      return {
        seed: group,
        step: i,
        op: `watcher ${i}: ${creates[i]}`,
        reference: na[i] ?? "",
        ours: nb[i] ?? "",
      };
    }
    const head = (na[i] ?? "").split("\n");
    const what = head[0]!.includes("canceled=true")
      ? "refused"
      : head.some((l) => l.startsWith("canceled"))
        ? "compacted"
        : head.length > 1
          ? "with events"
          : "without events";
    options.tally?.set(what, (options.tally.get(what) ?? 0) + 1);
  }
  a.reset();
  b.reset();
  return undefined;
}
