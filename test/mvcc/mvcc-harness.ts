/**
 * The randomized comparison of MvccStore with MvccModel (test/support/mvcc-model.ts):
 * one seeded stream of write transactions (puts, deleteRanges, ranges inside them),
 * reads at random revisions, compactions, changes() and reopens, run against both; every
 * answer compared. Writes are pipelined: the next write often begins right after `end()`
 * without waiting for it. Shared by mvcc-store.test.ts and the crash tests.
 */
import assert from "node:assert/strict";
import type { KvStore } from "../../src/db/kv-store.js";
import { isKvError } from "../../src/errors.js";
import type { MvccEvent } from "../../src/mvcc/changes.js";
import {
  keyOfChange,
  keyOfHistory,
  revisionOfChange,
  revisionOfHistory,
} from "../../src/mvcc/layout.js";
import type { MvccStore } from "../../src/mvcc/mvcc-store.js";
import type { KeyValue, Mvcc, RangeOptions, RangeResult } from "../../src/mvcc/types.js";
import { MvccModel } from "../support/mvcc-model.js";

/** Keys with 0x00 and 0xFF bytes, prefixes of one another, one long one. */
export const KEYS: readonly Uint8Array[] = [
  [0x00],
  [0x00, 0x00],
  [0x00, 0x01],
  [0x01],
  [0x61],
  [0x61, 0x00],
  [0x61, 0x00, 0xff],
  [0x61, 0x62],
  [0x62],
  [0xff],
  [0xff, 0x00],
  [0xff, 0xff],
  [...Buffer.from("long-key-".repeat(30))],
].map((k) => Uint8Array.from(k));

export type Rand = () => number;

export function pick<T>(r: Rand, a: readonly T[]): T {
  return a[Math.floor(r() * a.length)]!;
}

export function randomValue(r: Rand): Uint8Array {
  const n = r() < 0.15 ? 0 : Math.floor(r() * 40);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

function randomLease(r: Rand): bigint {
  const x = r();
  if (x < 0.7) return 0n;
  if (x < 0.9) return BigInt(Math.floor(r() * 1000));
  return (1n << 63n) + BigInt(Math.floor(r() * 1e9));
}

/** A range in etcd's conventions: one key, [key, end), key onwards, or everything. */
export function randomRange(r: Rand): [Uint8Array, Uint8Array] {
  const x = r();
  const k = pick(r, KEYS);
  if (x < 0.35) return [k, new Uint8Array(0)];
  if (x < 0.5) return [k, Uint8Array.of(0)];
  if (x < 0.55) return [new Uint8Array(0), Uint8Array.of(0)];
  const e = pick(r, KEYS);
  return Buffer.compare(k, e) <= 0 ? [k, e] : [e, k];
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

export function showKv(kv: KeyValue | undefined): string {
  if (kv === undefined) return "-";
  return `${hex(kv.key)}=${hex(kv.value)} c${kv.createRevision} m${kv.modRevision} v${kv.version} l${kv.lease}`;
}

function showResult(r: RangeResult): string {
  return `rev ${r.revision} count ${r.count} [${r.kvs.map(showKv).join(", ")}]`;
}

/** What an async call did: its answer shown as text, or its error's code and message. */
async function outcome<T>(f: () => Promise<T>, show: (t: T) => string): Promise<string> {
  try {
    return show(await f());
  } catch (err) {
    if (isKvError(err)) return `error ${err.code}: ${err.message}`;
    throw err;
  }
}

function syncOutcome(f: () => void): string {
  try {
    f();
    return "ok";
  } catch (err) {
    if (isKvError(err)) return `error ${err.code}: ${err.message}`;
    throw err;
  }
}

function randomOptions(r: Rand, top: number): RangeOptions {
  const o: { limit?: number; revision?: number; countOnly?: boolean } = {};
  if (r() < 0.4) o.limit = Math.floor(r() * 4);
  if (r() < 0.5) o.revision = Math.floor(r() * (top + 2));
  if (r() < 0.15) o.countOnly = true;
  return o;
}

/** The event log the model implies: per write, its last change per key, in key order. */
export class ExpectedEvents {
  events: MvccEvent[] = [];

  add(revision: number, changes: Map<string, { key: Uint8Array; kv: KeyValue | undefined }>) {
    const sorted = [...changes.values()].sort((a, b) => Buffer.compare(a.key, b.key));
    for (const c of sorted) {
      this.events.push(
        c.kv === undefined
          ? {
              type: "delete",
              revision,
              kv: {
                key: c.key,
                createRevision: 0,
                modRevision: revision,
                version: 0,
                value: new Uint8Array(0),
                lease: 0n,
              },
            }
          : { type: "put", revision, kv: c.kv },
      );
    }
  }

  compact(rev: number): void {
    this.events = this.events.filter((e) => e.revision >= rev);
  }
}

export function showEvents(events: readonly MvccEvent[]): string[] {
  return events.map((e) => `${e.revision} ${e.type} ${showKv(e.kv)}`);
}

export interface HarnessOptions {
  /** Reopens the store (close everything, open again); returns the new MvccStore. */
  reopen?: () => Promise<MvccStore>;
  /** Steps to run. */
  steps: number;
}

/** Runs the comparison; `where()` names the step for messages. */
export class Harness {
  readonly model = new MvccModel();
  readonly expected = new ExpectedEvents();
  /** Ends not yet awaited. */
  private inFlight: Promise<void>[] = [];
  /** Compactions not yet awaited. */
  private compactions: Promise<void>[] = [];
  step = 0;
  /** Inside `heldBurst`: ends settle only at its release. */
  private held = false;

  constructor(
    public store: MvccStore,
    private readonly r: Rand,
    private readonly seed: number,
  ) {}

  where(what: string): string {
    return `seed ${this.seed} step ${this.step}: ${what} (KV_SEED=${this.seed} to replay)`;
  }

  async settle(): Promise<void> {
    await Promise.all(this.inFlight);
    this.inFlight = [];
  }

  async settleCompactions(): Promise<void> {
    await Promise.all(this.compactions);
    await this.store.resumed;
    this.compactions = [];
  }

  /**
   * Once every compaction finished: the store's history entries are exactly the model's
   * versions kept, and its changes entries exactly the expected events.
   */
  async checkStoredEntries(kv: KvStore): Promise<void> {
    const kept = (this.model as unknown as { changes: { revision: number; kv: KeyValue }[] })
      .changes;
    const want = new Set(kept.map((c) => `${hex(c.kv.key)}@${c.revision}`));
    const got = new Set<string>();
    for (const [k] of await kv.iterator({ gte: Uint8Array.of(3), lt: Uint8Array.of(4) }).all()) {
      got.add(`${hex(keyOfHistory(k))}@${revisionOfHistory(k)}`);
    }
    assert.deepEqual([...got].sort(), [...want].sort(), this.where("history entries"));
    const events = new Set(this.expected.events.map((e) => `${e.revision} ${hex(e.kv.key)}`));
    const stored = new Set<string>();
    for (const [k] of await kv.iterator({ gte: Uint8Array.of(4), lt: Uint8Array.of(5) }).all()) {
      stored.add(`${revisionOfChange(k)} ${hex(keyOfChange(k))}`);
    }
    assert.deepEqual([...stored].sort(), [...events].sort(), this.where("changes entries"));
  }

  /** One write transaction of 1-4 operations, compared op by op; pipelined at random. */
  async writeTxn(): Promise<void> {
    const r = this.r;
    const w = this.store.write();
    const m = this.model.write();
    /** The keys this write put or deleted. */
    const touched = new Map<string, Uint8Array>();
    assert.equal(w.beginRevision, m.beginRevision, this.where("beginRevision"));
    const n = 1 + Math.floor(r() * 4);
    for (let i = 0; i < n; i++) {
      const x = r();
      if (x < 0.5) {
        const key = pick(r, KEYS);
        const value = randomValue(r);
        const lease = randomLease(r);
        const got = showKv(await w.put(key, value, lease));
        const want = showKv(await m.put(key, value, lease));
        assert.equal(got, want, this.where(`put ${hex(key)} previous`));
        touched.set(hex(key), key);
      } else if (x < 0.75) {
        const [key, end] = randomRange(r);
        if (key.length === 0) continue;
        const gotKvs = await w.deleteRange(key, end);
        const wantKvs = await m.deleteRange(key, end);
        assert.deepEqual(
          gotKvs.map(showKv),
          wantKvs.map(showKv),
          this.where(`deleteRange ${hex(key)}..${hex(end)}`),
        );
        for (const kv of wantKvs) touched.set(hex(kv.key), kv.key);
      } else {
        const [key, end] = randomRange(r);
        const o = randomOptions(r, w.revision);
        const got = await outcome(() => w.range(key, end, o), showResult);
        const want = await outcome(() => m.range(key, end, o), showResult);
        assert.equal(
          got,
          want,
          this.where(`range in write ${hex(key)}..${hex(end)} ${JSON.stringify(o)}`),
        );
      }
      assert.equal(w.revision, m.revision, this.where("write revision"));
    }
    const rev = m.revision;
    const p = w.end();
    await m.end();
    if (rev > m.beginRevision) {
      const final = new Map<string, { key: Uint8Array; kv: KeyValue | undefined }>();
      const view = this.model.read();
      for (const [id, key] of touched) {
        const kv = (await view.range(key, new Uint8Array(0))).kvs[0];
        final.set(id, { key, kv: kv?.modRevision === rev ? kv : undefined });
      }
      this.expected.add(rev, final);
    }
    if (this.held || r() < 0.6) this.inFlight.push(p);
    else {
      await p;
      await this.settle();
    }
    assert.equal(this.store.revision, this.model.revision, this.where("revision after end"));
  }

  /** A read view at a random revision, compared with the model's at the view's revision. */
  async read(): Promise<void> {
    const r = this.r;
    const v = this.store.read();
    try {
      assert.ok(v.revision <= this.model.revision, this.where("view revision"));
      const mv = this.model.read();
      const [key, end] = randomRange(r);
      const o = randomOptions(r, v.revision);
      const asked = {
        ...o,
        revision: o.revision !== undefined && o.revision > 0 ? o.revision : v.revision,
      };
      const got = await outcome(() => v.range(key, end, o), showResult);
      // (The model reads revision 0 as "its own revision": before the first write, nothing.)
      const want =
        asked.revision > v.revision
          ? "error FUTURE_REVISION: mvcc: required revision is a future revision"
          : asked.revision === 0
            ? "rev 0 count 0 []"
            : await outcome(() => mv.range(key, end, asked), showResult);
      assert.equal(
        got,
        want,
        this.where(`read ${hex(key)}..${hex(end)} ${JSON.stringify(o)} view ${v.revision}`),
      );
    } finally {
      v.release();
    }
  }

  /**
   * A range read in pages at one revision, each page starting after the previous one's
   * last key (Kubernetes' continuation), asking `limit` or `limit + 1` keys (etcd's Range
   * reads one beyond its limit): each page, count included, against the model's.
   */
  async pages(): Promise<void> {
    const r = this.r;
    const v = this.store.read();
    try {
      const mv = this.model.read();
      const [first, end] = randomRange(r);
      if (end.length === 0 || v.revision < 2) return;
      const rev =
        r() < 0.5 ? v.revision : Math.max(v.compactRevision, 1 + Math.floor(r() * v.revision));
      if (rev < 2) return;
      const limit = 1 + Math.floor(r() * 3);
      const plusOne = r() < 0.5 ? 1 : 0;
      let key = first;
      for (let page = 0; page < 20; page++) {
        const o = { limit: limit + plusOne, revision: rev };
        const got = await outcome(() => v.range(key, end, o), showResult);
        const want = await outcome(() => mv.range(key, end, o), showResult);
        assert.equal(
          got,
          want,
          this.where(`page ${page} ${hex(key)}..${hex(end)} ${JSON.stringify(o)}`),
        );
        if (want.startsWith("error")) return;
        const kvs = (await mv.range(key, end, o)).kvs;
        const last = kvs[Math.min(limit, kvs.length) - 1];
        if (kvs.length < limit + plusOne || last === undefined) return;
        key = Uint8Array.from([...last.key, 0]);
      }
    } finally {
      v.release();
    }
  }

  /** Every latest entry (latestScan) against the model's keys at `rev`. */
  async latestAt(rev: number): Promise<void> {
    const want =
      rev === 0
        ? { kvs: [] }
        : await this.model.read().range(new Uint8Array(0), Uint8Array.of(0), { revision: rev });
    const scan = this.store.latestScan();
    const got = await scan.nextBatch(Number.MAX_SAFE_INTEGER);
    scan.close();
    assert.deepEqual(got.map(showKv), want.kvs.map(showKv), this.where(`latest entries at ${rev}`));
  }

  /** latest() and latestScan() against the model's newest state (after settling). */
  async latest(): Promise<void> {
    await this.settle();
    const key = pick(this.r, KEYS);
    const want = (await this.model.read().range(key, new Uint8Array(0))).kvs[0];
    assert.equal(showKv(await this.store.latest(key)), showKv(want), this.where("latest"));
    const [a, b] = randomRange(this.r);
    const all = await this.model.read().range(a, b);
    const lt =
      b.length === 0 ? Uint8Array.from([...a, 0]) : b.length === 1 && b[0] === 0 ? undefined : b;
    const scan = this.store.latestScan({ gte: a, ...(lt === undefined ? {} : { lt }) });
    const got: KeyValue[] = [];
    for (;;) {
      const rows = await scan.nextBatch(3);
      got.push(...rows);
      if (rows.length < 3) break;
    }
    scan.close();
    const wantRows = all.kvs;
    assert.deepEqual(got.map(showKv), wantRows.map(showKv), this.where("latestScan"));
  }

  /**
   * changes(from) for a random from, against the expected event log up to `top` (default:
   * the model's revision; the store's after a crash may be lower).
   */
  async changes(top = this.model.revision): Promise<void> {
    await this.settle();
    const from = Math.floor(this.r() * (top + 2));
    const want =
      from < this.model.compactRevision
        ? ["error COMPACTED: mvcc: required revision has been compacted"]
        : showEvents(this.expected.events.filter((e) => e.revision >= from && e.revision <= top));
    let got: string[];
    try {
      const events: MvccEvent[] = [];
      for await (const e of this.store.changes(from)) events.push(e);
      got = showEvents(events);
    } catch (err) {
      if (!isKvError(err)) throw err;
      got = [`error ${err.code}: ${err.message}`];
    }
    assert.deepEqual(got, want, this.where(`changes from ${from}`));
  }

  /** compact at a random revision (sometimes an invalid one), physical part not awaited. */
  async compact(): Promise<void> {
    const top = this.model.revision;
    const low = this.model.compactRevision;
    const rev = low + Math.floor(this.r() * (top - low + 2)) - (this.r() < 0.1 ? 1 : 0);
    let done: Promise<void> | undefined;
    const got = syncOutcome(() => {
      done = this.store.compact(rev).done;
    });
    const want = syncOutcome(() => this.model.compact(rev));
    assert.equal(got, want, this.where(`compact ${rev}`));
    assert.equal(
      this.store.compactRevision,
      this.model.compactRevision,
      this.where("compactRevision"),
    );
    if (done !== undefined) {
      this.expected.compact(rev);
      this.compactions.push(done);
    }
  }

  /** Closes and reopens through `reopen`, then checks the state read back. */
  async reopen(reopen: () => Promise<MvccStore>): Promise<void> {
    this.store = await reopen();
    this.inFlight = [];
    this.compactions = [];
    assert.equal(this.store.revision, this.model.revision, this.where("revision after reopen"));
    assert.equal(
      this.store.compactRevision,
      this.model.compactRevision,
      this.where("compactRevision after reopen"),
    );
  }

  /**
   * A burst of writes, reads and compactions gathered by `hold` (a small `maxBytes` at
   * times, so that the burst is written in several batches), then released and settled.
   */
  async heldBurst(): Promise<void> {
    const r = this.r;
    this.store.hold(r() < 0.5 ? 1 + Math.floor(r() * 600) : 4 << 20);
    this.held = true;
    try {
      const n = 1 + Math.floor(r() * 6);
      for (let i = 0; i < n; i++) {
        const x = r();
        if (x < 0.7) await this.writeTxn();
        else if (x < 0.9) await this.read();
        else await this.compact();
      }
    } finally {
      this.held = false;
      this.store.release();
    }
    await this.settle();
  }

  /** One random step. */
  async randomStep(reopen?: () => Promise<MvccStore>): Promise<void> {
    this.step++;
    const x = this.r();
    if (x < 0.45) await this.writeTxn();
    else if (x < 0.5) await this.heldBurst();
    else if (x < 0.7) await this.read();
    else if (x < 0.75) await this.pages();
    else if (x < 0.83) await this.latest();
    else if (x < 0.9) await this.changes();
    else if (x < 0.96 || reopen === undefined) await this.compact();
    else await this.reopen(reopen);
  }
}

export type { Mvcc };
