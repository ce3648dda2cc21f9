/**
 * Model-based test of the whole store: seeded random operations (puts, deletes, batches,
 * concurrent writes, gets, iterators with random bounds/reverse/limit/keysOnly, scans,
 * snapshots and reads at them, iterators held open across later writes, flushes, close and
 * reopen, crash (no close) and reopen) run against the store and against an in-memory sorted map; every read must match
 * the model exactly (keys, values, order). Tiny write buffers and blocks make flushes (and
 * multi-block tables) happen all the time, so reads cross memtables and many level-0
 * tables, with overwrites and deletes of flushed keys.
 *
 * Compaction configurations (tiny triggers, targets and level sizes) make level-0 ->
 * level-1 and deeper compactions run all the time, inline on the in-memory file system,
 * and add `compactRange` (unbounded or with random bounds) to the operation mix; held
 * snapshots and iterators see compactions happen under them. One smaller configuration
 * runs on the real file system (a temp dir) with compactions in the worker thread, so
 * they run while reads, iterators and snapshots are open. Each compaction configuration
 * asserts that compactions did happen.
 *
 * Default: 5 seeds x 600 operations per configuration (the worker one: 2 x 300).
 * KV_STRESS=1: 200 seeds x 3000 (the worker one: 20 x 1500).
 * A failure prints the seed; KV_SEED=<seed> replays it (as the first seed of the run).
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import {
  type IteratorOptions,
  type KvIterator,
  type KvStore,
  MemoryFileSystem,
  type OpenOptions,
  open,
  RealFileSystem,
  type Snapshot,
} from "../../src/index.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const SEEDS = STRESS ? 200 : 5;
const OPS = STRESS ? 3000 : 600;

// ---- keyspace ----

/**
 * 200 keys, fixed for every seed: short text keys that are prefixes of one another
 * ("k1" < "k10" < "k100"), binary keys with 0x00 and 0xff bytes (some prefixes of others),
 * and long keys sharing long prefixes (prefix compression inside blocks).
 */
function buildKeyspace(): Buffer[] {
  const seen = new Set<string>();
  const keys: Buffer[] = [];
  const add = (k: Buffer) => {
    const h = k.toString("hex");
    if (k.length === 0 || seen.has(h)) return;
    seen.add(h);
    keys.push(k);
  };
  for (let i = 0; i < 110; i++) add(Buffer.from(`k${i}`));
  add(Buffer.from("k"));
  for (const bytes of [
    [0x00],
    [0x00, 0x00],
    [0x00, 0x00, 0x00],
    [0x00, 0x01],
    [0x01],
    [0x7f],
    [0x7f, 0xff],
    [0x80],
    [0x80, 0x00],
    [0xfe, 0xff],
    [0xff],
    [0xff, 0x00],
    [0xff, 0xff],
    [0xff, 0xff, 0xff],
    [0xff, 0xff, 0xff, 0xff],
    [0x6b, 0x00], // "k\0": just after "k"
    [0x6b, 0x31, 0xff], // "k1\xff": after every "k1..." text key
  ]) {
    add(Buffer.from(bytes));
  }
  const r = rng(0x5eed);
  while (keys.length < 170) {
    const n = 1 + randInt(r, 8);
    const k = Buffer.alloc(n);
    for (let i = 0; i < n; i++) k[i] = r() < 0.3 ? (r() < 0.5 ? 0 : 255) : randInt(r, 256);
    add(k);
  }
  const long = "user/0000000000/profile/settings/".repeat(3);
  for (let i = 0; keys.length < 200; i++) add(Buffer.from(`${long}${i}`));
  return keys;
}

const KEYS = buildKeyspace();

// ---- the model ----

type State = Map<string, Buffer>; // hex(key) -> value

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const show = (b: Uint8Array) => {
  const s = Buffer.from(b).toString("latin1");
  return /^[\x20-\x7e]*$/.test(s) ? JSON.stringify(s) : `0x${hex(b)}`;
};

interface Bounds {
  gt?: Buffer;
  gte?: Buffer;
  lt?: Buffer;
  lte?: Buffer;
}

/** The entries of `state` within the bounds, in order, at most `limit` (< 0: all). */
function expectedEntries(
  state: State,
  bounds: Bounds,
  reverse: boolean,
  limit: number,
  keysOnly: boolean,
): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  for (const [h, v] of state) {
    const k = Buffer.from(h, "hex");
    if (bounds.gt !== undefined && Buffer.compare(k, bounds.gt) <= 0) continue;
    if (bounds.gte !== undefined && Buffer.compare(k, bounds.gte) < 0) continue;
    if (bounds.lt !== undefined && Buffer.compare(k, bounds.lt) >= 0) continue;
    if (bounds.lte !== undefined && Buffer.compare(k, bounds.lte) > 0) continue;
    out.push([k, keysOnly ? Buffer.alloc(0) : v]);
  }
  out.sort((a, b) => Buffer.compare(a[0], b[0]));
  if (reverse) out.reverse();
  return limit < 0 ? out : out.slice(0, limit);
}

function describeEntries(entries: ReadonlyArray<readonly [Uint8Array, Uint8Array]>): string {
  const parts = entries
    .slice(0, 12)
    .map(([k, v]) => `${show(k)}=${v.length}B:${hex(v).slice(0, 16)}`);
  return `[${entries.length}] ${parts.join(" ")}${entries.length > 12 ? " ..." : ""}`;
}

function assertSameEntries(
  actual: ReadonlyArray<readonly [Uint8Array, Uint8Array]>,
  expected: ReadonlyArray<readonly [Uint8Array, Uint8Array]>,
  what: string,
): void {
  const a = actual.map(([k, v]) => `${hex(k)}=${hex(v)}`);
  const e = expected.map(([k, v]) => `${hex(k)}=${hex(v)}`);
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) {
      assert.fail(
        `${what}: entry ${i} differs\n  expected ${describeEntries(expected.slice(i))}\n` +
          `  actual   ${describeEntries(actual.slice(i))}`,
      );
    }
  }
}

function assertValue(actual: Uint8Array | undefined, expected: Buffer | undefined, what: string) {
  const a = actual === undefined ? "undefined" : hex(actual);
  const e = expected === undefined ? "undefined" : hex(expected);
  if (a !== e) assert.fail(`${what}: expected ${e}, got ${a}`);
}

// ---- the random run ----

interface Config {
  name: string;
  options: OpenOptions;
  /** Compaction configuration: compactRange joins the op mix; compactions must happen. */
  compaction?: boolean;
  /** Run on the real file system in a temp dir (compactions in the worker thread). */
  realFs?: boolean;
  /** Seeds and operations per seed, when not the defaults. */
  seeds?: number;
  ops?: number;
}

const tempDirs: Array<{ remove: () => void }> = [];
after(() => {
  for (const d of tempDirs) d.remove();
});

interface HeldIterator {
  it: KvIterator;
  expected: Array<[Buffer, Buffer]>;
  pos: number;
  desc: string;
}

interface HeldSnapshot {
  snap: Snapshot;
  state: State;
  id: number;
}

class Run {
  readonly r: () => number;
  /** Replaced by its crash clone at each crash + reopen. */
  fs: MemoryFileSystem | RealFileSystem;
  readonly dir: string;
  db!: KvStore;
  state: State = new Map();
  iterators: HeldIterator[] = [];
  snapshots: HeldSnapshot[] = [];
  flushes = 0;
  reopens = 0;
  crashes = 0;
  /** Compactions (and trivial moves) installed, over every open of the run. */
  compactions = 0;
  trivialMoves = 0;
  compactRanges = 0;
  snapshotIds = 0;
  readonly trace: string[] = [];

  constructor(
    readonly seed: number,
    readonly config: Config,
  ) {
    this.r = rng(seed);
    if (config.realFs === true) {
      const d = tempDir("kv-model-");
      tempDirs.push(d);
      this.fs = new RealFileSystem();
      this.dir = `${d.path}/db`;
    } else {
      this.fs = new MemoryFileSystem();
      this.dir = "/db";
    }
  }

  get options(): OpenOptions {
    return { ...this.config.options, fs: this.fs };
  }

  /** Adds the compaction counters of the open store to the run's totals. */
  countCompactions(): void {
    const c = this.db.stats().compaction;
    this.compactions += c.compactions;
    this.trivialMoves += c.trivialMoves;
    assert.equal(c.failures, 0, `compaction failures: ${c.lastError}`);
  }

  note(s: string): void {
    this.trace.push(s);
    if (this.trace.length > 25) this.trace.shift();
  }

  key(): Buffer {
    return KEYS[randInt(this.r, KEYS.length)]!;
  }

  value(op: number): Buffer {
    const p = this.r();
    const n =
      p < 0.05
        ? 0
        : p < 0.7
          ? randInt(this.r, 40)
          : p < 0.95
            ? 40 + randInt(this.r, 260)
            : 300 + randInt(this.r, 1700);
    const v = Buffer.alloc(n);
    const tag = Buffer.from(`${op}:`);
    tag.copy(v, 0, 0, Math.min(n, tag.length));
    for (let i = tag.length; i < n; i++) v[i] = randInt(this.r, 256);
    return v;
  }

  /** A bound: a key of the keyspace, or a key near one (extended or cut), or random bytes. */
  boundKey(): Buffer {
    const p = this.r();
    const k = this.key();
    if (p < 0.6) return k;
    if (p < 0.75) return Buffer.concat([k, Buffer.from([randInt(this.r, 256)])]);
    if (p < 0.85 && k.length > 1) return k.subarray(0, k.length - 1);
    const n = 1 + randInt(this.r, 4);
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = randInt(this.r, 256);
    return b;
  }

  randomIteratorOptions(): { opts: IteratorOptions; bounds: Bounds; limit: number; desc: string } {
    const bounds: Bounds = {};
    const opts: IteratorOptions = {};
    const parts: string[] = [];
    const lower = this.r();
    if (lower < 0.3) {
      bounds.gt = this.boundKey();
      opts.gt = bounds.gt;
      parts.push(`gt ${show(bounds.gt)}`);
    } else if (lower < 0.6) {
      bounds.gte = this.boundKey();
      opts.gte = bounds.gte;
      parts.push(`gte ${show(bounds.gte)}`);
    }
    const upper = this.r();
    if (upper < 0.3) {
      bounds.lt = this.boundKey();
      opts.lt = bounds.lt;
      parts.push(`lt ${show(bounds.lt)}`);
    } else if (upper < 0.6) {
      bounds.lte = this.boundKey();
      opts.lte = bounds.lte;
      parts.push(`lte ${show(bounds.lte)}`);
    }
    if (this.r() < 0.4) {
      opts.reverse = true;
      parts.push("reverse");
    }
    let limit = -1;
    const l = this.r();
    if (l < 0.35) {
      limit = [0, 1, 2, 5, 17, 60][randInt(this.r, 6)]!;
      opts.limit = limit;
      parts.push(`limit ${limit}`);
    } else if (l < 0.4) {
      opts.limit = Number.POSITIVE_INFINITY;
      parts.push("limit Infinity");
    }
    if (this.r() < 0.2) {
      opts.keysOnly = true;
      parts.push("keysOnly");
    }
    if (this.r() < 0.2) {
      opts.fillCache = false;
      parts.push("fillCache false");
    }
    return { opts, bounds, limit, desc: parts.join(", ") };
  }

  /** Reads an iterator to its end, with a randomly chosen consumption style. */
  async drain(it: KvIterator): Promise<Array<[Buffer, Buffer]>> {
    const style = randInt(this.r, 3);
    if (style === 0) return it.all();
    const out: Array<[Buffer, Buffer]> = [];
    if (style === 1) {
      for (;;) {
        const batch = await it.nextBatch(1 + randInt(this.r, 7));
        out.push(...batch);
        if (batch.length === 0) break;
      }
      return out;
    }
    for await (const e of it) out.push(e);
    return out;
  }

  write(op: number): Promise<void> {
    const sync = this.r() < 0.7;
    if (this.r() < 0.75) {
      const k = this.key();
      const v = this.value(op);
      this.note(`put ${show(k)} ${v.length}B${sync ? "" : " nosync"}`);
      this.state.set(hex(k), v);
      return this.db.put(k, v, { sync });
    }
    const k = this.key();
    this.note(`delete ${show(k)}`);
    this.state.delete(hex(k));
    return this.db.delete(k, { sync });
  }

  async step(op: number): Promise<void> {
    const p = randInt(this.r, 1000);
    if (p < 380) {
      await this.write(op);
    } else if (p < 450) {
      const batch = this.db.batch();
      const n = 1 + randInt(this.r, 10);
      const parts: string[] = [];
      for (let i = 0; i < n; i++) {
        const k = this.key();
        if (this.r() < 0.7) {
          const v = this.value(op);
          batch.put(k, v);
          this.state.set(hex(k), v);
          parts.push(`put ${show(k)}`);
        } else {
          batch.delete(k);
          this.state.delete(hex(k));
          parts.push(`del ${show(k)}`);
        }
      }
      this.note(`batch [${parts.join(", ")}]`);
      await this.db.write(batch);
    } else if (p < 490) {
      // Writes issued in one tick commit in call order (possibly as one group).
      const n = 2 + randInt(this.r, 8);
      this.note(`concurrent writes x${n}:`);
      const pending: Promise<void>[] = [];
      for (let i = 0; i < n; i++) pending.push(this.write(op));
      await Promise.all(pending);
    } else if (p < 640) {
      const k = this.r() < 0.9 ? this.key() : this.boundKey();
      this.note(`get ${show(k)}`);
      assertValue(await this.db.get(k), this.state.get(hex(k)), `get ${show(k)}`);
    } else if (p < 720) {
      const { opts, bounds, limit, desc } = this.randomIteratorOptions();
      this.note(`iterator {${desc}}`);
      const expected = expectedEntries(
        this.state,
        bounds,
        opts.reverse === true,
        limit,
        opts.keysOnly === true,
      );
      assertSameEntries(await this.drain(this.db.iterator(opts)), expected, `iterator {${desc}}`);
    } else if (p < 745) {
      const start = this.r() < 0.7 ? this.boundKey() : undefined;
      const end = this.r() < 0.7 ? this.boundKey() : undefined;
      const limit = this.r() < 0.5 ? 0 : 1 + randInt(this.r, 30);
      const desc = `scan ${start ? show(start) : "-"} .. ${end ? show(end) : "-"} limit ${limit}`;
      this.note(desc);
      const bounds: Bounds = {};
      if (start !== undefined) bounds.gte = start;
      if (end !== undefined) bounds.lt = end;
      const expected = expectedEntries(this.state, bounds, false, limit === 0 ? -1 : limit, false);
      assertSameEntries(await this.db.scan(start, end, limit), expected, desc);
    } else if (p < 770) {
      if (this.snapshots.length < 4) {
        const id = this.snapshotIds++;
        this.note(`snapshot #${id}`);
        this.snapshots.push({ snap: this.db.snapshot(), state: new Map(this.state), id });
      }
    } else if (p < 830) {
      const held = this.snapshots[randInt(this.r, this.snapshots.length)];
      if (held !== undefined) {
        if (this.r() < 0.5) {
          const k = this.key();
          this.note(`get ${show(k)} at snapshot #${held.id}`);
          assertValue(
            await this.db.get(k, { snapshot: held.snap }),
            held.state.get(hex(k)),
            `get ${show(k)} at snapshot #${held.id}`,
          );
        } else {
          const { opts, bounds, limit, desc } = this.randomIteratorOptions();
          opts.snapshot = held.snap;
          this.note(`iterator {${desc}} at snapshot #${held.id}`);
          const expected = expectedEntries(
            held.state,
            bounds,
            opts.reverse === true,
            limit,
            opts.keysOnly === true,
          );
          assertSameEntries(
            await this.drain(this.db.iterator(opts)),
            expected,
            `iterator {${desc}} at snapshot #${held.id}`,
          );
        }
      }
    } else if (p < 850) {
      const i = randInt(this.r, this.snapshots.length);
      const held = this.snapshots[i];
      if (held !== undefined) {
        this.note(`release snapshot #${held.id}`);
        held.snap.release();
        this.snapshots.splice(i, 1);
      }
    } else if (p < 870) {
      if (this.iterators.length < 3) {
        const { opts, bounds, limit, desc } = this.randomIteratorOptions();
        const held = this.snapshots[randInt(this.r, this.snapshots.length)];
        const atSnapshot = held !== undefined && this.r() < 0.3;
        if (atSnapshot) opts.snapshot = held.snap;
        const d = `held iterator {${desc}}${atSnapshot ? ` at snapshot #${held.id}` : ""}`;
        this.note(`open ${d}`);
        const expected = expectedEntries(
          atSnapshot ? held.state : this.state,
          bounds,
          opts.reverse === true,
          limit,
          opts.keysOnly === true,
        );
        this.iterators.push({ it: this.db.iterator(opts), expected, pos: 0, desc: d });
      }
    } else if (p < 940) {
      const i = randInt(this.r, this.iterators.length);
      const held = this.iterators[i];
      if (held !== undefined) {
        const n = 1 + randInt(this.r, 6);
        this.note(`advance ${held.desc} by ${n} (at ${held.pos}/${held.expected.length})`);
        for (let j = 0; j < n; j++) {
          const next: IteratorResult<[Buffer, Buffer], undefined> = await held.it.next();
          const want = held.expected[held.pos];
          if (want === undefined) {
            assert.equal(next.done, true, `${held.desc}: expected the end at ${held.pos}`);
            assert.equal(held.it.isClosed, true, `${held.desc}: closed at its end`);
            this.iterators.splice(i, 1);
            break;
          }
          assert.equal(next.done, false, `${held.desc}: ended early at ${held.pos}`);
          assertSameEntries([next.value!], [want], `${held.desc} entry ${held.pos}`);
          held.pos++;
        }
      }
    } else if (p < 955) {
      const i = randInt(this.r, this.iterators.length);
      const held = this.iterators[i];
      if (held !== undefined) {
        this.note(`close ${held.desc}`);
        held.it.close();
        this.iterators.splice(i, 1);
      }
    } else if (p < 985 && this.config.compaction === true && this.r() < 0.4) {
      const start = this.r() < 0.5 ? this.boundKey() : undefined;
      const end = this.r() < 0.5 ? this.boundKey() : undefined;
      this.note(`compactRange ${start ? show(start) : "-"} .. ${end ? show(end) : "-"}`);
      await this.db.compactRange(start, end);
      this.compactRanges++;
      const done = this.db.stats();
      assert.equal(done.memtableEntries, 0, "compactRange() flushes the memtable first");
      if (start === undefined && end === undefined) {
        // Every table was pushed down into one level, the deepest that held files (nothing
        // wrote a new table since: the steps of this run are sequential and the memtable
        // was flushed first).
        const used = done.levelFiles.filter((n) => n > 0).length;
        assert.ok(
          used <= 1 && done.levelFiles[0] === 0,
          `an unbounded compactRange leaves everything in one level below 0: ${done.levelFiles}`,
        );
      }
    } else if (p < 985) {
      this.note("flush");
      const before = this.db.stats();
      await this.db.flush();
      const after = this.db.stats();
      assert.equal(after.memtableEntries, 0, "flush() empties the memtable");
      assert.equal(after.immutableMemtables, 0, "flush() waits for the flush");
      if (before.memtableEntries > 0) assert.ok(after.flushes > before.flushes);
    } else if (this.fs instanceof MemoryFileSystem && this.r() < 0.5) {
      // A process crash: no close, so no final log sync and no manifest close; the
      // operating system keeps every write the store made (full retention). Every
      // acknowledged write, synced or not, reached the OS: the model stays exact.
      this.note("crash + reopen");
      await this.crashReopen();
    } else {
      this.note("close + reopen");
      await this.reopen();
    }
    const stats = this.db.stats();
    assert.equal(stats.openSnapshots, this.snapshots.length, "stats().openSnapshots");
  }

  async reopen(): Promise<void> {
    this.flushes += this.db.stats().flushes;
    this.countCompactions();
    await this.db.close();
    for (const s of this.snapshots) assert.equal(s.snap.released, true, "close releases snapshots");
    for (const h of this.iterators) {
      assert.equal(h.it.isClosed, true, "close closes iterators");
      assert.equal((await h.it.next()).done, true, "a closed iterator yields nothing");
    }
    this.snapshots = [];
    this.iterators = [];
    this.db = await open(this.dir, this.options);
    this.reopens++;
  }

  /** Reopens from a crash clone (full retention) of the file system, abandoning the store. */
  async crashReopen(): Promise<void> {
    this.flushes += this.db.stats().flushes;
    this.countCompactions();
    const crashed = (this.fs as MemoryFileSystem).crashClone({
      unsyncedRetention: 1,
      seed: randInt(this.r, 1 << 30),
    });
    // The abandoned store runs on the old file system: closing it changes nothing the
    // clone holds; it only stops its background work.
    await this.db.close();
    this.snapshots = [];
    this.iterators = [];
    this.fs = crashed;
    this.db = await open(this.dir, this.options);
    this.crashes++;
  }

  async checkEverything(what: string): Promise<void> {
    const all = expectedEntries(this.state, {}, false, -1, false);
    assertSameEntries(await this.db.iterator().all(), all, `${what}: full scan`);
    assertSameEntries(
      await this.db.iterator({ reverse: true }).all(),
      [...all].reverse(),
      `${what}: full reverse scan`,
    );
    for (const k of KEYS)
      assertValue(await this.db.get(k), this.state.get(hex(k)), `${what}: get ${show(k)}`);
  }

  async run(ops: number): Promise<void> {
    this.db = await open(this.dir, this.options);
    let op = 0;
    try {
      for (; op < ops; op++) await this.step(op);
      await this.checkEverything("at the end");
      await this.reopen();
      await this.checkEverything("after the final reopen");
      this.flushes += this.db.stats().flushes;
      this.countCompactions();
      await this.db.close();
    } catch (err) {
      await this.db.close().catch(() => {});
      const message = err instanceof Error ? err.message : String(err);
      const wrapped = new Error(
        `seed ${this.seed} (replay with KV_SEED=${this.seed}), ${this.config.name}, op #${op}: ${message}\n` +
          `last operations:\n  ${this.trace.join("\n  ")}`,
      );
      wrapped.cause = err;
      throw wrapped;
    }
  }
}

const TINY_COMPACTION: OpenOptions = {
  l0CompactionTrigger: 2,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  levelSizeMultiplier: 4,
  compactionMode: "inline",
};

const CONFIGS: Config[] = [
  {
    name: "4 KiB write buffer, 128-byte blocks, Bloom filters",
    options: { writeBufferSize: 4096, blockSize: 128 },
  },
  {
    name: "8 KiB write buffer, 256-byte blocks, no Bloom filters",
    options: { writeBufferSize: 8192, blockSize: 256, bloomBitsPerKey: 0 },
  },
  {
    name: "16 KiB write buffer, 256-byte blocks, deflate compression",
    options: { writeBufferSize: 16384, blockSize: 256, compression: "deflate" },
  },
  {
    // Far more level-0 tables than open files: readers are evicted and reopened all the time.
    name: "4 KiB write buffer, 128-byte blocks, no block cache, 10 open files",
    options: { writeBufferSize: 4096, blockSize: 128, blockCacheSize: 0, maxOpenFiles: 10 },
  },
  {
    // Compactions all the time: L0 -> L1 after every second flush, 2 KiB output tables,
    // level 1 full at 8 KiB, each deeper level 4x larger.
    name: "4 KiB write buffer, 128-byte blocks, constant inline compactions",
    options: { writeBufferSize: 4096, blockSize: 128, ...TINY_COMPACTION },
    compaction: true,
  },
  {
    name: "8 KiB write buffer, 256-byte blocks, constant inline compactions, 3 levels, 10 open files, no block cache",
    options: {
      writeBufferSize: 8192,
      blockSize: 256,
      ...TINY_COMPACTION,
      numLevels: 3,
      maxOpenFiles: 10,
      blockCacheSize: 0,
    },
    compaction: true,
  },
  {
    // Real files, compactions in the worker thread while reads, iterators and snapshots run.
    name: "4 KiB write buffer, 128-byte blocks, constant compactions in the worker thread (real file system)",
    options: {
      writeBufferSize: 4096,
      blockSize: 128,
      ...TINY_COMPACTION,
      compactionMode: "worker",
    },
    compaction: true,
    realFs: true,
    seeds: STRESS ? 20 : 2,
    ops: STRESS ? 1500 : 300,
  },
];

/**
 * Seeds that found bugs, replayed on every run (config index, seed, the bug).
 */
const REGRESSIONS: Array<[config: number, seed: number, bug: string]> = [
  // The obsolete-file sweep took the live set before listing the directory, so a flush
  // that finished in between had its new table deleted ("open table: ENOENT").
  [0, 1950941826, "sweep deleted a table flushed while it listed the directory"],
  [0, 602744411, "sweep deleted a table flushed while it listed the directory"],
  // A background compaction started between the steps of a compactRange and moved files
  // below the level compactRange was filling; manual compactions now hold background ones.
  [5, 452898688, "a background compaction interleaved with compactRange"],
];

describe("model test regressions", () => {
  for (const [config, seed, bug] of REGRESSIONS) {
    test(`seed ${seed} (${bug}) matches the model`, async () => {
      await new Run(seed, CONFIGS[config]!).run(OPS);
    });
  }
});

describe("the store matches a sorted-map model under random operations", () => {
  for (const config of CONFIGS) {
    test(`random operations with ${config.name} read back exactly what the model holds`, async (t) => {
      const base = testSeed();
      const seeds = config.seeds ?? SEEDS;
      const ops = config.ops ?? OPS;
      let flushes = 0;
      let reopens = 0;
      let crashes = 0;
      let compactions = 0;
      let trivialMoves = 0;
      let compactRanges = 0;
      for (let i = 0; i < seeds; i++) {
        const run = new Run(base + i, config);
        await run.run(ops);
        flushes += run.flushes;
        reopens += run.reopens;
        crashes += run.crashes;
        compactions += run.compactions;
        trivialMoves += run.trivialMoves;
        compactRanges += run.compactRanges;
      }
      t.diagnostic(
        `seeds ${base}..${base + seeds - 1}: ${seeds} x ${ops} ops, ${flushes} flushes, ${reopens} reopens, ${crashes} crash-reopens` +
          (config.compaction === true
            ? `, ${compactions} compactions, ${trivialMoves} trivial moves, ${compactRanges} compactRange calls`
            : ""),
      );
      assert.ok(flushes >= seeds * 3, `only ${flushes} flushes: the tables are barely exercised`);
      if (config.compaction === true) {
        assert.ok(
          compactions >= seeds * 2,
          `only ${compactions} compactions in ${seeds} seeds: compaction is barely exercised`,
        );
      }
    });
  }
});
