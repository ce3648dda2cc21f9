/**
 * MVCC store micro benchmark (not a test): the cost of a revisioned put against a plain
 * one, on one KvStore in a fresh temporary directory per run (unsynced writes, as a
 * cluster member's store runs: the Raft log is what is synced).
 *
 * - plain: `KvStore.put(0x01 ‖ key, value)`, today's stored form of a cluster put;
 * - mvcc: `MvccStore.write()`, `put(key, value, 0n)`, `end()`;
 * each serial (awaited one at a time) and with 64 in flight (plain: 64 concurrent puts;
 * mvcc: pipelined, the next write begun right after `end()`, at most 64 ends unresolved).
 * 16-byte keys `key_%012d` drawn from 10,000, 100-byte values, 20,000 puts per run; runs
 * alternate and repeat; medians are printed with the batch bytes per put (what the store's
 * log receives) and the table bytes per put (flushes and compactions during the run and
 * an untimed flush at its end).
 * Then a range over 10,000 keys: at the newest revision and at an older one (each key with
 * one newer version), whole and as a page of 500.
 *
 *   node dist/bench/mvcc-micro.js [--puts 20000] [--rounds 3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WriteBatch } from "../src/batch/write-batch.js";
import { type KvStore, open } from "../src/index.js";
import { MvccStore } from "../src/mvcc/mvcc-store.js";

const args = process.argv.slice(2);
function arg(name: string, dflt: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
}
const PUTS = arg("puts", 20_000);
const ROUNDS = arg("rounds", 3);
const KEYS = 10_000;
const VALUE = Buffer.alloc(100, 0x61);

const keyOf = (i: number) => Buffer.from(`key_${String(i).padStart(12, "0")}`);
const plainKey = (i: number) => Buffer.concat([Buffer.of(1), keyOf(i)]);

interface Figures {
  usPerPut: number;
  /** Process CPU (user + system, the thread pool's writes included) per put. */
  cpuPerPut: number;
  batchBytes: number;
  tableBytes: number;
}

async function withStore<T>(f: (db: KvStore, bytes: { n: number }) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "mvcc-bench-"));
  const db = await open(dir, { sync: false });
  const bytes = { n: 0 };
  const write = db.write.bind(db);
  db.write = (b: WriteBatch, o) => {
    bytes.n += b.byteSize;
    return write(b, o);
  };
  const put = db.put.bind(db);
  db.put = (k, v, o) => {
    const b = new WriteBatch().put(k, v);
    bytes.n += b.byteSize;
    return put(k, v, o);
  };
  try {
    return await f(db, bytes);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * At most `size` writes unresolved: `add` waits, when the window is full, until a write
 * resolves, then for every write resolved by then (so the next ones queue together, as a
 * Raft Ready's entries reach the applier together).
 */
class Window {
  private readonly running = new Set<Promise<void>>();
  constructor(private readonly size: number) {}

  async add(p: Promise<void>): Promise<void> {
    this.running.add(p);
    void p.then(() => this.running.delete(p));
    if (this.running.size < this.size) return;
    await Promise.race(this.running);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async drain(): Promise<void> {
    await Promise.all(this.running);
  }
}

function cpuSince(c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0);
  return c.user + c.system;
}

function tableBytes(db: KvStore): number {
  const s = db.stats();
  return s.flushBytes + s.compaction.bytesWritten;
}

/** The keys of a run: a seeded sequence over KEYS. */
function keySequence(): () => number {
  let x = 12345;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % KEYS;
  };
}

/** Times PUTS calls of `put(key index)`, at most `inFlight` unresolved. */
async function measure(
  db: KvStore,
  bytes: { n: number },
  inFlight: number,
  put: (i: number) => Promise<{ done: Promise<void> }>,
): Promise<Figures> {
  const next = keySequence();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const window = new Window(inFlight);
  for (let i = 0; i < PUTS; i++) await window.add((await put(next())).done);
  await window.drain();
  const usPerPut = ((performance.now() - t0) * 1000) / PUTS;
  const cpuPerPut = cpuSince(c0) / PUTS;
  await db.flush(); // (untimed) so that both stores' table bytes include what they logged
  return { usPerPut, cpuPerPut, batchBytes: bytes.n / PUTS, tableBytes: tableBytes(db) / PUTS };
}

function plain(inFlight: number): Promise<Figures> {
  return withStore((db, bytes) =>
    measure(db, bytes, inFlight, async (i) => ({ done: db.put(plainKey(i), VALUE) })),
  );
}

function mvcc(inFlight: number): Promise<Figures> {
  return withStore(async (db, bytes) => {
    const m = await MvccStore.open(db);
    const figures = await measure(db, bytes, inFlight, async (i) => {
      const w = m.write();
      await w.put(keyOf(i), VALUE, 0n);
      return { done: w.end() };
    });
    await m.close();
    return figures;
  });
}

const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)]!;

async function ranges(): Promise<void> {
  await withStore(async (db) => {
    const m = await MvccStore.open(db);
    let old = 0;
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < KEYS; i++) {
        const w = m.write();
        await w.put(keyOf(i), VALUE, 0n);
        void w.end();
      }
      const w = m.write();
      await w.end();
      // After the first pass: every key as first written; each gets one newer version.
      if (pass === 0) old = m.revision;
    }
    await db.flush();
    const all = [new Uint8Array(0), Uint8Array.of(0)] as const;
    const cases: Array<[string, number, number]> = [
      ["newest revision, all 10,000", 0, 0],
      ["old revision, all 10,000", old, 0],
      ["newest revision, limit 500", 0, 500],
      ["old revision, limit 500", old, 500],
    ];
    for (const [name, revision, limit] of cases) {
      const times: number[] = [];
      let count = 0;
      for (let r = 0; r < 5; r++) {
        const v = m.read();
        const t0 = performance.now();
        const res = await v.range(all[0], all[1], { revision, limit });
        times.push(performance.now() - t0);
        count = res.kvs.length;
        v.release();
      }
      console.log(`range ${name}: ${median(times).toFixed(1)} ms (${count} kvs, count ${KEYS})`);
    }
    await m.close();
  });
}

async function main(): Promise<void> {
  const rows: Record<string, Figures[]> = {};
  const kinds: Array<[string, () => Promise<Figures>]> = [
    ["plain serial", () => plain(1)],
    ["mvcc serial", () => mvcc(1)],
    ["plain 64 in flight", () => plain(64)],
    ["mvcc 64 in flight", () => mvcc(64)],
  ];
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, f] of kinds) {
      const list = rows[name] ?? [];
      list.push(await f());
      rows[name] = list;
    }
  }
  console.log(`${PUTS} puts per run, ${ROUNDS} runs each, medians (unsynced store)`);
  for (const [name] of kinds) {
    const f = rows[name]!;
    console.log(
      `${name.padEnd(20)} ${median(f.map((x) => x.usPerPut))
        .toFixed(2)
        .padStart(7)} µs/put` +
        `  cpu ${median(f.map((x) => x.cpuPerPut))
          .toFixed(2)
          .padStart(6)} µs/put` +
        `  batch ${median(f.map((x) => x.batchBytes)).toFixed(0)} B/put` +
        `  tables ${median(f.map((x) => x.tableBytes)).toFixed(0)} B/put`,
    );
  }
  await ranges();
}

await main();
