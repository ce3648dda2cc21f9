/**
 * Memtable micro benchmark (not a test): inserts N entries with random 16-byte keys
 * (`key_%012d` of a shuffled 0..N-1, so keys share their first ~10 bytes) and 100-byte
 * values, all views into one shared buffer as the write path passes them, then measures
 * insert and get ns/op (medians over repeated builds and lookup rounds) and the heap growth
 * per entry (the table's own memory: the keys, values and their views exist beforehand;
 * "with views": plus fresh views per entry, as the write path makes them). Also: inserts
 * with fresh views and the garbage-collection time they cause (PerformanceObserver "gc"
 * entries), gets that read the value; for the memtable, a full scan reading key, value and
 * seq, and the entries and real memory (heap + ArrayBuffers, key and value bytes included)
 * of a table filled to approximateBytes = 4 MiB from per-batch buffers.
 *
 *   node dist/bench/memtable-micro.js                 # every variant, each in a fresh process
 *   node dist/bench/memtable-micro.js --n 20000       # a smaller table (a 4 MiB memtable)
 *   node --expose-gc dist/bench/memtable-micro.js --impl memtable
 *   node --expose-gc dist/bench/memtable-micro.js --impl skiplist --cmp loop --height 12 --branching 4
 *   node dist/bench/memtable-micro.js --impl compare  # compareBytes vs Buffer.compare alone
 *
 * Figures from past runs, and what they decided: docs/benchmarks/memtable.md.
 *
 * The skip list here is the LevelDB design the memtable was first meant to be (fixed-shape
 * nodes, `next` as a plain array, seeded xorshift heights, LevelDB's FindGreaterOrEqual
 * that skips re-comparing the node it compared one level up), kept as the baseline that
 * src/memtable/btree.ts was chosen against.
 */
import { execFileSync } from "node:child_process";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { compareBytes, KIND_PUT } from "../src/key/internal-key.js";
import { Memtable } from "../src/memtable/memtable.js";
import { rng as seededRandom } from "../src/util/random.js";

interface Options {
  impl: string;
  n: number;
  cmp: string;
  height: number;
  branching: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { impl: "all", n: 1_000_000, cmp: "loop", height: 12, branching: 4 };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    const v = argv[i + 1] ?? "";
    if (name === "--impl") o.impl = v;
    else if (name === "--n") o.n = Number(v);
    else if (name === "--cmp") o.cmp = v;
    else if (name === "--height") o.height = Number(v);
    else if (name === "--branching") o.branching = Number(v);
    else throw new Error(`unknown argument ${name}`);
  }
  return o;
}

/** Seeded uint32s from the project's PRNG (src/util/random.ts). */
function rng(seed: number): () => number {
  const r = seededRandom(seed);
  return () => Math.floor(r() * 4294967296);
}

interface Data {
  /** Entry i's key is buf[i * 116, + 16), its value the following 100 bytes. */
  buf: Uint8Array;
  keys: Uint8Array[];
  values: Uint8Array[];
  /** Random indexes into keys for the lookups. */
  order: Uint32Array;
}

function makeData(n: number): Data {
  const rand = rng(12345);
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rand() % (i + 1);
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
  }
  const KEY = 16;
  const VALUE = 100;
  const buf = new Uint8Array(n * (KEY + VALUE));
  const keys: Uint8Array[] = [];
  const values: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const off = i * (KEY + VALUE);
    const text = `key_${String(perm[i]).padStart(12, "0")}`;
    for (let j = 0; j < KEY; j++) buf[off + j] = text.charCodeAt(j);
    for (let j = 0; j < VALUE; j++) buf[off + KEY + j] = (i + j) & 0xff;
    keys.push(buf.subarray(off, off + KEY));
    values.push(buf.subarray(off + KEY, off + KEY + VALUE));
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = rand() % n;
  return { buf, keys, values, order };
}

interface Table {
  add(seq: number, kind: 0 | 1, key: Uint8Array, value: Uint8Array): void;
  get(key: Uint8Array, seq: number): { readonly value: Uint8Array } | undefined;
}

// ---- Skip list baseline -------------------------------------------------------------

class SkipNode {
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: 0 | 1;
  readonly value: Uint8Array;
  readonly next: (SkipNode | null)[];

  constructor(key: Uint8Array, seq: number, kind: 0 | 1, value: Uint8Array, height: number) {
    this.key = key;
    this.seq = seq;
    this.kind = kind;
    this.value = value;
    const next: (SkipNode | null)[] = [];
    for (let i = 0; i < height; i++) next.push(null);
    this.next = next;
  }
}

const bufferCompare = Buffer.compare;

function makeSkipList(cmpName: string, maxHeight: number, branching: number): Table {
  const cmp =
    cmpName === "buffer"
      ? (a: Uint8Array, b: Uint8Array): number => bufferCompare(a, b)
      : cmpName === "loop"
        ? compareBytes
        : null;
  if (cmp === null) throw new Error(`unknown --cmp ${cmpName}`);
  const head = new SkipNode(new Uint8Array(0), 0, KIND_PUT, new Uint8Array(0), maxHeight);
  const prev: SkipNode[] = [];
  for (let i = 0; i < maxHeight; i++) prev.push(head);
  let height = 1;
  const rand = rng(0x2545f491);

  function randomHeight(): number {
    let h = 1;
    while (h < maxHeight && rand() % branching === 0) h++;
    return h;
  }

  /** First node >= (key, seq); fills `prev` when asked. */
  function findGreaterOrEqual(key: Uint8Array, seq: number, fill: boolean): SkipNode | null {
    let x = head;
    let level = height - 1;
    let last: SkipNode | null = null;
    for (;;) {
      const nx = x.next[level]!;
      let less = false;
      if (nx !== null && nx !== last) {
        const c = cmp!(nx.key, key);
        less = c < 0 || (c === 0 && nx.seq > seq);
      }
      if (less) {
        x = nx!;
      } else {
        if (fill) prev[level] = x;
        if (level === 0) return nx;
        last = nx;
        level--;
      }
    }
  }

  return {
    add(seq, kind, key, value) {
      findGreaterOrEqual(key, seq, true);
      const h = randomHeight();
      if (h > height) {
        for (let i = height; i < h; i++) prev[i] = head;
        height = h;
      }
      const node = new SkipNode(key, seq, kind, value, h);
      for (let i = 0; i < h; i++) {
        node.next[i] = prev[i]!.next[i]!;
        prev[i]!.next[i] = node;
      }
    },
    get(key, seq) {
      const n = findGreaterOrEqual(key, seq, false);
      return n !== null && compareBytes(n.key, key) === 0 ? n : undefined;
    },
  };
}

// ---- Measurement ----------------------------------------------------------------------

function heapBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc !== undefined) {
    gc();
    gc();
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function nowNs(): number {
  return Number(process.hrtime.bigint());
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/**
 * Heap + ArrayBuffer growth per entry of a table built by `add(table, i)` for i < n: the
 * median over three tables, all kept alive until measured (a table dropped early could be
 * collected inside another's measurement). Needs --expose-gc.
 */
function measureBytes<T>(make: () => T, n: number, add: (table: T, i: number) => void): number {
  const kept: T[] = [];
  const perEntry: number[] = [];
  for (let round = 0; round < 3; round++) {
    const before = heapBytes();
    const table = make();
    for (let i = 0; i < n; i++) add(table, i);
    kept.push(table);
    perEntry.push((heapBytes() - before) / n);
  }
  if (kept.length !== 3) throw new Error("unreachable");
  return median(perEntry);
}

/** Milliseconds of garbage collection reported while `f` runs (needs the event loop after). */
async function gcMillis(f: () => void): Promise<number> {
  let ms = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) ms += e.duration;
  });
  obs.observe({ entryTypes: ["gc"] });
  f();
  // GC entries are delivered asynchronously; let them arrive.
  await new Promise<void>((resolve) => setTimeout(resolve, 50));
  obs.disconnect();
  return ms;
}

/**
 * Builds the table `builds` times (at least 2M inserts in all, the first build being JIT
 * warm-up for small tables) and times each build; then times three rounds of 500k lookups of
 * random present keys and of absent keys. Reports medians.
 */
async function runTable(label: string, make: () => Table, n: number): Promise<void> {
  const { buf, keys, values, order } = makeData(n);
  // Absent keys: a present key with one byte appended sorts right after it.
  const missKeys = keys.slice(0, Math.min(n, 100_000)).map((k) => {
    const m = new Uint8Array(k.length + 1);
    m.set(k);
    m[k.length] = 0x30;
    return m;
  });
  // Memory first, before the timing loops leave garbage behind: the table's own structures
  // (the views exist beforehand), then the table plus fresh key and value views, as the
  // write path creates them when it decodes a batch.
  const tableBytes = measureBytes(make, n, (t, i) => t.add(i + 1, KIND_PUT, keys[i]!, values[i]!));
  const withViewsBytes = measureBytes(make, n, (t, i) => {
    const off = i * 116;
    t.add(i + 1, KIND_PUT, buf.subarray(off, off + 16), buf.subarray(off + 16, off + 116));
  });
  const builds = Math.max(3, Math.ceil(2_000_000 / n));
  const insertNs: number[] = [];
  let table = make();
  for (let b = 0; b < builds; b++) {
    table = make();
    const t = nowNs();
    for (let i = 0; i < n; i++) table.add(i + 1, KIND_PUT, keys[i]!, values[i]!);
    insertNs.push((nowNs() - t) / n);
  }
  // As the write path inserts: fresh key and value views per entry (decodeBatch makes them),
  // timed together with the collector's work they cause.
  const viewInsertNs: number[] = [];
  const gcMs = await gcMillis(() => {
    for (let b = 0; b < builds; b++) {
      table = make();
      const t = nowNs();
      for (let i = 0; i < n; i++) {
        const off = i * 116;
        table.add(i + 1, KIND_PUT, buf.subarray(off, off + 16), buf.subarray(off + 16, off + 116));
      }
      viewInsertNs.push((nowNs() - t) / n);
    }
  });
  const LOOKUPS = 500_000;
  const getNs: number[] = [];
  const getValueNs: number[] = [];
  const missNs: number[] = [];
  for (let round = 0; round < 3; round++) {
    let t = nowNs();
    let found = 0;
    for (let i = 0; i < LOOKUPS; i++) {
      if (table.get(keys[order[i % n]!]!, n + 1) !== undefined) found++;
    }
    getNs.push((nowNs() - t) / LOOKUPS);
    if (found !== LOOKUPS) throw new Error(`lookups found ${found} of ${LOOKUPS}`);
    // As the read path does: a hit's value is read (and copied out by the store).
    t = nowNs();
    let sum = 0;
    for (let i = 0; i < LOOKUPS; i++) {
      const v = table.get(keys[order[i % n]!]!, n + 1)!.value;
      sum += v[v.length - 1]!;
    }
    getValueNs.push((nowNs() - t) / LOOKUPS);
    if (sum < 0) throw new Error("unreachable");
    t = nowNs();
    for (let i = 0; i < LOOKUPS; i++) {
      if (table.get(missKeys[i % missKeys.length]!, n + 1) !== undefined) {
        throw new Error("found an absent key");
      }
    }
    missNs.push((nowNs() - t) / LOOKUPS);
  }
  const f = (x: number): string => x.toFixed(0).padStart(5);
  console.log(
    `${label.padEnd(42)} n=${n}  insert ${f(median(insertNs))} ns/op  get ${f(median(getNs))} ns/op  ` +
      `get-miss ${f(median(missNs))} ns/op  heap/entry ${tableBytes.toFixed(0)} B, ` +
      `${withViewsBytes.toFixed(0)} B with views`,
  );
  console.log(
    `${"".padEnd(42)} n=${n}  insert with fresh views ${f(median(viewInsertNs))} ns/op, ` +
      `GC ${((gcMs * 1e6) / (builds * n)).toFixed(0)} ns/insert  get+value ${f(median(getValueNs))} ns/op`,
  );
}

/**
 * The memtable only: iteration cost, and real memory of a table filled as the engine fills
 * one (views into per-batch buffers) until `approximateBytes` reaches 4 MiB, the default
 * write buffer size: entries held, measured heap + ArrayBuffer growth (everything the table
 * keeps alive, key and value bytes included), and approximateBytes / measured. Needs
 * --expose-gc for the memory figures.
 */
async function runMemtableExtras(n: number): Promise<void> {
  const { buf } = makeData(n);
  const table = new Memtable();
  for (let i = 0; i < n; i++) {
    const off = i * 116;
    table.add(i + 1, KIND_PUT, buf.subarray(off, off + 16), buf.subarray(off + 16, off + 116));
  }
  const scanNs: number[] = [];
  let sink = 0;
  for (let round = 0; round < Math.max(5, Math.ceil(2_000_000 / n)); round++) {
    const it = table.iterator();
    const t = nowNs();
    for (it.seekToFirst(); it.valid(); it.next()) sink += it.key[0]! + it.value[0]! + it.seq;
    scanNs.push((nowNs() - t) / n);
  }
  const f = (x: number): string => x.toFixed(0).padStart(5);
  console.log(
    `${"".padEnd(42)} n=${n}  scan (key+value+seq) ${f(median(scanNs))} ns/entry (${sink % 10})`,
  );

  const TARGET = 4 << 20;
  // Enough entries for a 4 MiB table even at ~320 bytes of overhead per entry.
  const source = makeData(40_000).buf;
  const BATCH = 16;
  const rounds: { count: number; real: number; approx: number }[] = [];
  const kept: Memtable[] = [];
  for (let round = 0; round < 3; round++) {
    const before = heapBytes();
    const m = new Memtable();
    let batch = new Uint8Array(0);
    for (let i = 0; m.approximateBytes < TARGET; i++) {
      // As the write path: each batch of 16 entries arrives in a buffer of its own, and the
      // table is given views into it (a table that keeps the views keeps the buffer alive).
      const at = (i % BATCH) * 116;
      if (at === 0) batch = source.slice(i * 116, (i + BATCH) * 116);
      m.add(i + 1, KIND_PUT, batch.subarray(at, at + 16), batch.subarray(at + 16, at + 116));
    }
    batch = new Uint8Array(0);
    kept.push(m);
    const real = heapBytes() - before;
    rounds.push({ count: m.count, real, approx: m.approximateBytes });
  }
  const r = rounds.sort((a, b) => a.real - b.real)[1]!;
  console.log(
    `${"".padEnd(42)} 4 MiB table (16 B keys, 100 B values): ${r.count} entries, ` +
      `real ${(r.real / 2 ** 20).toFixed(2)} MiB = ${(r.real / r.count).toFixed(0)} B/entry ` +
      `(${(r.real / r.count - 116).toFixed(0)} B beyond key+value), approximateBytes/real ${(r.approx / r.real).toFixed(2)}`,
  );
}

function runCompare(): void {
  const n = 1 << 16;
  const data = makeData(n);
  const keys = data.keys;
  const rounds = 50;
  for (const [name, f] of [
    ["compareBytes (loop)", compareBytes],
    ["Buffer.compare", (a: Uint8Array, b: Uint8Array) => bufferCompare(a, b)],
  ] as const) {
    let sink = 0;
    let ns = 0;
    for (let pass = 0; pass < 2; pass++) {
      const t = nowNs();
      for (let r = 0; r < rounds; r++) {
        for (let i = 0; i < n - 1; i++) sink += f(keys[i]!, keys[i + 1]!) < 0 ? 1 : 0;
      }
      ns = (nowNs() - t) / (rounds * (n - 1));
    }
    console.log(`${name.padEnd(22)} 16-byte keys: ${ns.toFixed(1)} ns/compare (${sink})`);
  }
}

const opts = parseArgs(process.argv.slice(2));
if (opts.impl === "all") {
  const self = fileURLToPath(import.meta.url);
  const variants = [
    ["--impl", "compare"],
    ["--impl", "memtable"],
    ["--impl", "skiplist", "--cmp", "loop", "--height", "12", "--branching", "4"],
    ["--impl", "skiplist", "--cmp", "buffer", "--height", "12", "--branching", "4"],
    ["--impl", "skiplist", "--cmp", "loop", "--height", "20", "--branching", "2"],
  ];
  for (const v of variants) {
    execFileSync(process.execPath, ["--expose-gc", self, ...v, "--n", String(opts.n)], {
      stdio: "inherit",
    });
  }
} else if (opts.impl === "compare") {
  runCompare();
} else if (opts.impl === "memtable") {
  await runTable("memtable (B+tree)", () => new Memtable(), opts.n);
  await runMemtableExtras(opts.n);
} else if (opts.impl === "skiplist") {
  await runTable(
    `skiplist cmp=${opts.cmp} height=${opts.height} branching=${opts.branching}`,
    () => makeSkipList(opts.cmp, opts.height, opts.branching),
    opts.n,
  );
} else {
  throw new Error(`unknown --impl ${opts.impl}`);
}
