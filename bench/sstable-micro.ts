/**
 * SSTable micro benchmark (not a test). Builds one table of N entries (16-byte keys
 * `key_%012d` ascending, 100-byte values, default table options: 4 KiB blocks, restart
 * interval 16, 10 bits/key filter, no compression) on the real file system in a temp dir,
 * then runs each measurement in a fresh process (so one scenario's garbage and cache do
 * not tax the next):
 *
 *   get-warm    random present keys; a block cache holding every block (filled by a scan)
 *   get-miss    random absent keys inside the key range (`key_%011dx`), warm cache
 *   get-8mib    random present keys with an 8 MiB block cache (most blocks read again)
 *   get-nocache random present keys without a block cache (every get reads its block)
 *   scan        full forward iteration, rows/s: warm cache, and fillCache false
 *
 * Lookup keys are written into one reused buffer before each get (as a caller's key
 * would be), so the figures do not include fetching a million key objects from memory.
 * Figures are medians of rounds (and the best round), in ns per operation, net of the
 * key generation. The machine's load shows in them: run it on a quiet machine.
 *
 *   node dist/bench/sstable-micro.js             # N = 1,000,000
 *   node dist/bench/sstable-micro.js --n 200000
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KIND_PUT, MAX_SEQUENCE } from "../src/key/internal-key.js";
import { BlockCache } from "../src/sstable/block-cache.js";
import { TableBuilder } from "../src/sstable/table-builder.js";
import { TableReader } from "../src/sstable/table-reader.js";
import { rng as seededRandom } from "../src/util/random.js";
import { RealFileSystem } from "../src/vfs/real-file-system.js";

const SCENARIOS = ["get-warm", "get-miss", "get-8mib", "get-nocache", "scan"] as const;

interface Options {
  n: number;
  rounds: number;
  scenario: string;
  path: string;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 1_000_000, rounds: 5, scenario: "", path: "" };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i];
    const v = argv[++i] ?? "";
    if (name === "--n") o.n = Number(v);
    else if (name === "--rounds") o.rounds = Number(v);
    else if (name === "--scenario") o.scenario = v;
    else if (name === "--path") o.path = v;
    else throw new Error(`unknown argument ${name}`);
  }
  return o;
}

/** Seeded uint32s from the project's PRNG (src/util/random.ts). */
function rng(seed: number): () => number {
  const r = seededRandom(seed);
  return () => Math.floor(r() * 4294967296);
}

const DIGITS = 12;

/** Writes `key_%012d` of i into key (16 bytes); with absent, `key_%011dx` instead. */
function writeKey(key: Uint8Array, i: number, absent: boolean): void {
  let v = i;
  let end = 4 + DIGITS;
  if (absent) key[--end] = 0x78; // 'x'
  for (let p = end - 1; p >= 4; p--) {
    key[p] = 0x30 + (v % 10);
    v = Math.floor(v / 10);
  }
}

function newKey(): Uint8Array {
  const key = new Uint8Array(16);
  key.set([0x6b, 0x65, 0x79, 0x5f]); // "key_"
  return key;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString("en-US", {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

/** Median ns per get over `ops` random keys; checks every answer. */
function timeGets(reader: TableReader, n: number, ops: number, rounds: number, absent: boolean) {
  const rand = rng(777);
  const order = new Uint32Array(ops);
  for (let i = 0; i < ops; i++) order[i] = rand() % n;
  const key = newKey();
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let found = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < ops; i++) {
      writeKey(key, order[i]!, absent);
      if (reader.get(key, MAX_SEQUENCE) !== undefined) found++;
    }
    samples.push(Number(process.hrtime.bigint() - t0) / ops);
    if (found !== (absent ? 0 : ops)) throw new Error(`found ${found} of ${ops}`);
  }
  // The cost of generating the keys alone, to subtract.
  const t0 = process.hrtime.bigint();
  let x = 0;
  for (let i = 0; i < ops; i++) {
    writeKey(key, order[i]!, absent);
    x += key[15]!;
  }
  const keyNs = Number(process.hrtime.bigint() - t0) / ops;
  if (x < 0) throw new Error("unreachable");
  return { ns: median(samples), best: Math.min(...samples), keyNs };
}

function scanRate(reader: TableReader, fillCache: boolean, rounds: number): number {
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const it = reader.iterator({ fillCache });
    let rows = 0;
    let bytes = 0;
    const t0 = process.hrtime.bigint();
    for (it.seekToFirst(); it.valid(); it.next()) {
      rows++;
      bytes += it.value.length;
    }
    const ns = Number(process.hrtime.bigint() - t0);
    it.close();
    if (bytes === 0) throw new Error("empty scan");
    samples.push((rows / ns) * 1e9);
  }
  return median(samples);
}

async function openReader(path: string, cache: BlockCache | undefined): Promise<TableReader> {
  return TableReader.open(await new RealFileSystem().openReadable(path), 1, { blockCache: cache });
}

async function runScenario(o: Options): Promise<void> {
  const ops = Math.min(o.n, 1_000_000);
  const line = (what: string, figure: string) => console.log(`${what.padEnd(34)} ${figure}`);
  if (o.scenario === "get-warm" || o.scenario === "get-miss") {
    const cache = new BlockCache(1024 * 2 ** 20);
    const reader = await openReader(o.path, cache);
    scanRate(reader, true, 1);
    const absent = o.scenario === "get-miss";
    const before = { ...reader.stats };
    const { ns, best, keyNs } = timeGets(reader, o.n, ops, o.rounds, absent);
    const net = `${fmt(ns - keyNs)} ns/op net, best ${fmt(best - keyNs)} (key generation ${fmt(keyNs)})`;
    if (absent) {
      const checked = reader.stats.filterChecked - before.filterChecked;
      const useful = reader.stats.filterUseful - before.filterUseful;
      line(
        "get, miss (absent, in range)",
        `${net}, filter ruled out ${fmt((useful / checked) * 100, 2)} %`,
      );
    } else {
      const s = cache.stats();
      line("get, warm cache", net);
      line("  block cache", `${fmt(s.count)} blocks, ${fmt(s.bytes / 2 ** 20, 1)} MiB`);
    }
    await reader.close();
  } else if (o.scenario === "get-8mib") {
    const cache = new BlockCache(8 * 2 ** 20);
    const reader = await openReader(o.path, cache);
    timeGets(reader, o.n, Math.min(ops, 100_000), 1, false);
    const s0 = cache.stats();
    const { ns, best, keyNs } = timeGets(reader, o.n, Math.min(ops, 300_000), o.rounds, false);
    const s1 = cache.stats();
    const hitRate = (s1.hits - s0.hits) / (s1.hits - s0.hits + s1.misses - s0.misses);
    line(
      "get, 8 MiB cache",
      `${fmt(ns - keyNs)} ns/op net, best ${fmt(best - keyNs)} (hit rate ${fmt(hitRate * 100, 1)} %)`,
    );
    await reader.close();
  } else if (o.scenario === "get-nocache") {
    const reader = await openReader(o.path, undefined);
    const { ns, best, keyNs } = timeGets(reader, o.n, Math.min(ops, 300_000), o.rounds, false);
    line("get, no block cache", `${fmt(ns - keyNs)} ns/op net, best ${fmt(best - keyNs)}`);
    await reader.close();
  } else if (o.scenario === "scan") {
    const t0 = process.hrtime.bigint();
    const reader = await openReader(o.path, new BlockCache(1024 * 2 ** 20));
    line(
      "open (footer, index, filter, props)",
      `${fmt(Number(process.hrtime.bigint() - t0) / 1e6, 2)} ms`,
    );
    line("scan, filling the cache", `${fmt(scanRate(reader, true, 1))} rows/s`);
    line("scan, warm cache", `${fmt(scanRate(reader, true, o.rounds))} rows/s`);
    await reader.close();
    const cold = await openReader(o.path, undefined);
    line("scan, fillCache false, no cache", `${fmt(scanRate(cold, false, o.rounds))} rows/s`);
    await cold.close();
  } else {
    throw new Error(`unknown scenario ${o.scenario}`);
  }
}

async function build(path: string, n: number): Promise<void> {
  const fs = new RealFileSystem();
  const key = newKey();
  const value = new Uint8Array(100);
  const rand = rng(42);
  for (let i = 0; i < value.length; i++) value[i] = rand() & 0xff;
  const t0 = process.hrtime.bigint();
  const out = await fs.createWritable(path);
  const builder = new TableBuilder(out);
  for (let i = 0; i < n; i++) {
    writeKey(key, i, false);
    value[i % 100] = i & 0xff;
    builder.add(key, n - i, KIND_PUT, value);
  }
  const props = builder.finish();
  await out.sync();
  await out.close();
  const ns = Number(process.hrtime.bigint() - t0);
  console.log(`node ${process.version}, ${fmt(n)} entries, medians of rounds`);
  console.log(
    `build: ${fmt(ns / 1e6)} ms (${fmt(ns / n)} ns/entry, sync included), ` +
      `${fmt(props.fileSize / 2 ** 20, 1)} MiB, ${fmt(props.dataBlocks)} data blocks`,
  );
}

const opts = parseArgs(process.argv.slice(2));
if (opts.scenario !== "") {
  await runScenario(opts);
} else {
  const dir = mkdtempSync(join(tmpdir(), "kv-sstable-bench-"));
  try {
    const path = join(dir, "000001.sst");
    await build(path, opts.n);
    const self = fileURLToPath(import.meta.url);
    for (const scenario of SCENARIOS) {
      const args = [self, "--scenario", scenario, "--path", path, "--n", String(opts.n)];
      args.push("--rounds", String(opts.rounds));
      execFileSync(process.execPath, args, { stdio: "inherit" });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
