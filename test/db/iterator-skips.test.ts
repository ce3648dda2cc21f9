/**
 * DbIterator's forward walk over a key with many hidden versions (a key rewritten or
 * deleted again and again since the last flush): after MAX_SEQUENTIAL_SKIPS of them it
 * seeks past the key instead of stepping over each, and it shows what a version-by-version
 * walk shows: the newest visible version of each user key, tombstones hidden, the
 * snapshot's sequence and the bounds honoured (checked against a plain model on random
 * histories).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DbIterator, MAX_SEQUENTIAL_SKIPS } from "../../src/db/db-iterator.js";
import type { InternalIterator } from "../../src/key/internal-iterator.js";
import {
  compareBytes,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
  type ValueKind,
} from "../../src/key/internal-key.js";
import { rng } from "../support/random.js";

interface Entry {
  key: Uint8Array;
  seq: number;
  kind: ValueKind;
  value: Uint8Array;
}

/** Entries in internal order (user key ascending, sequence descending), counting moves. */
class ArrayIterator implements InternalIterator {
  private at = 0;
  nexts = 0;
  seeks = 0;
  constructor(private readonly entries: Entry[]) {
    entries.sort((a, b) => compareBytes(a.key, b.key) || b.seq - a.seq);
    this.at = entries.length;
  }
  valid(): boolean {
    return this.at >= 0 && this.at < this.entries.length;
  }
  seekToFirst(): void {
    this.at = 0;
  }
  seekToLast(): void {
    this.at = this.entries.length - 1;
  }
  seek(key: Uint8Array, seq: number): void {
    this.seeks++;
    this.at = this.entries.findIndex((e) => {
      const c = compareBytes(e.key, key);
      return c > 0 || (c === 0 && e.seq <= seq);
    });
    if (this.at < 0) this.at = this.entries.length;
  }
  seekForPrev(): void {
    throw new Error("not used");
  }
  next(): void {
    this.nexts++;
    this.at++;
  }
  prev(): void {
    this.at--;
  }
  private get e(): Entry {
    return this.entries[this.at]!;
  }
  get key(): Uint8Array {
    return this.e.key;
  }
  get seq(): number {
    return this.e.seq;
  }
  get kind(): ValueKind {
    return this.e.kind;
  }
  get value(): Uint8Array {
    return this.e.value;
  }
  close(): void {}
}

const b = (s: string) => Buffer.from(s);
const str = (u: Uint8Array) => Buffer.from(u).toString();

function walk(it: DbIterator): string[] {
  const out: string[] = [];
  while (it.step()) out.push(`${str(it.key)}=${str(it.value)}`);
  return out;
}

test("a key with 1,000 hidden versions costs a seek, not 1,000 steps", () => {
  for (const newest of [KIND_PUT, KIND_DELETE] as const) {
    const entries: Entry[] = [];
    for (let seq = 1; seq <= 1000; seq++) {
      const kind = seq === 1000 ? newest : seq % 2 === 0 ? KIND_DELETE : KIND_PUT;
      entries.push({ key: b("a"), seq, kind, value: b(`v${seq}`) });
    }
    entries.push({ key: b("b"), seq: 1001, kind: KIND_PUT, value: b("b1") });
    const inner = new ArrayIterator(entries);
    const rows = walk(new DbIterator(inner, MAX_SEQUENCE, {}));
    assert.deepEqual(rows, newest === KIND_PUT ? ["a=v1000", "b=b1"] : ["b=b1"]);
    assert.ok(inner.nexts <= 2 * MAX_SEQUENTIAL_SKIPS + 2, `${inner.nexts} steps`);
    assert.equal(inner.seeks, 1);
  }
});

test("random histories: the newest visible version of each key, as a model walks them", () => {
  const random = rng(11);
  for (let round = 0; round < 300; round++) {
    const entries: Entry[] = [];
    let seq = 1;
    const keys = 1 + Math.floor(random() * 5);
    for (let i = 0; i < 60; i++) {
      // A few hot keys: long runs of versions of one key.
      const k = `k${Math.floor(random() * keys)}`;
      const kind = random() < 0.3 ? KIND_DELETE : KIND_PUT;
      entries.push({ key: b(k), seq: seq++, kind, value: b(`${k}@${seq}`) });
    }
    const snapshot = 1 + Math.floor(random() * seq);
    const lower = random() < 0.5 ? b(`k${Math.floor(random() * keys)}`) : undefined;
    const options = lower === undefined ? {} : random() < 0.5 ? { gt: lower } : { gte: lower };
    const model = new Map<string, Entry>();
    for (const e of entries) {
      if (e.seq > snapshot) continue;
      const k = str(e.key);
      if ((model.get(k)?.seq ?? 0) < e.seq) model.set(k, e);
    }
    const expected = [...model.entries()]
      .filter(
        ([k, e]) =>
          e.kind === KIND_PUT &&
          (lower === undefined || ("gt" in options ? k > str(lower) : k >= str(lower))),
      )
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([k, e]) => `${k}=${str(e.value)}`);
    const got = walk(new DbIterator(new ArrayIterator(entries.slice()), snapshot, options));
    assert.deepEqual(got, expected, `round ${round}, snapshot ${snapshot}`);
  }
});
