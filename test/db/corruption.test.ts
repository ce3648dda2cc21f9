/**
 * Damaged files at the store level. A store is built (several flushes, so data sits in
 * several tables with overwrites and deletes across them) and closed; then a copy of its
 * files gets one flipped bit (or a cut), and the copy is opened and read in full, by get
 * and by forward and reverse iteration. The rule: every read returns the right answer or
 * fails with KvError CORRUPTION naming the damaged file; never a wrong value, a missing
 * entry, or another kind of error; and the damage is always reported somewhere.
 *
 * Covered: a table's data blocks, index, filter, properties and footer; a write-ahead log
 * record followed by more records; CURRENT; the manifest.
 *
 * Bit positions are seeded: a failure prints the seed, KV_SEED=<seed> replays it.
 * KV_STRESS=1 flips many more positions.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  isKvError,
  type KvStore,
  MemoryFileSystem,
  type OpenOptions,
  open,
} from "../../src/index.js";
import { decodeFooter, FOOTER_SIZE, type Footer } from "../../src/sstable/format.js";
import { readLog } from "../../src/wal/log-reader.js";
import { copyOfFiles } from "../support/memory-copy.js";
import { randInt, rng, testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const FLIPS = STRESS
  ? { data: 60, index: 20, filter: 20, properties: 20, footer: 52 }
  : {
      data: 6,
      index: 3,
      filter: 3,
      properties: 3,
      footer: 6,
    };

const DIR = "/db";

type Model = Map<string, string>;

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("latin1");

const copyOf = (src: MemoryFileSystem) => copyOfFiles(src, DIR);

/** A copy of `src` in which `path` is replaced by `change(its bytes)`. */
async function damagedCopy(
  src: MemoryFileSystem,
  path: string,
  change: (bytes: Uint8Array) => Uint8Array,
): Promise<MemoryFileSystem> {
  const out = await copyOf(src);
  out.writeFile(path, change(src.readFile(path)));
  return out;
}

function flipBit(offset: number, bit: number): (bytes: Uint8Array) => Uint8Array {
  return (bytes) => {
    const copy = bytes.slice();
    assert.ok(offset < copy.length, `offset ${offset} is past the end (${copy.length})`);
    copy[offset]! ^= 1 << bit;
    return copy;
  };
}

async function names(fs: MemoryFileSystem): Promise<string[]> {
  return fs.list(DIR);
}

/** The files that hold data: logs and tables (open may rewrite the manifest, not these). */
async function dataFiles(fs: MemoryFileSystem): Promise<string[]> {
  return (await names(fs)).filter((n) => n.endsWith(".log") || n.endsWith(".sst"));
}

/** Asserts err is CORRUPTION naming `file` (in .file or in the message). */
function assertCorruption(err: unknown, file: string, what: string): void {
  if (!isKvError(err, "CORRUPTION")) {
    assert.fail(`${what}: expected KvError CORRUPTION naming ${file}, got ${String(err)}`);
  }
  assert.ok(
    err.file === file || err.message.includes(file),
    `${what}: the CORRUPTION error does not name ${file}: file=${err.file} message=${err.message}`,
  );
}

// ---- the store under test ----

interface Built {
  fs: MemoryFileSystem;
  model: Model;
  /** Every key ever written (deleted ones included), sorted. */
  keys: string[];
  tables: string[];
}

const keyOf = (i: number) => `key${String(i).padStart(4, "0")}`;

async function buildStore(options: OpenOptions): Promise<Built> {
  const fs = new MemoryFileSystem();
  const db = await open(DIR, { ...options, fs, writeBufferSize: 1 << 20 });
  const model: Model = new Map();
  const put = async (k: string, v: string) => {
    model.set(k, v);
    await db.put(k, v);
  };
  // Table 1: 300 keys. Table 2: overwrites every third key, deletes every tenth. Table 3:
  // new keys interleaved with the old ones, and more overwrites. Then a few in the log.
  for (let i = 0; i < 600; i += 2) await put(keyOf(i), `first-${i}-${"a".repeat(i % 50)}`);
  await db.flush();
  for (let i = 0; i < 600; i += 6) await put(keyOf(i), `second-${i}-${"b".repeat(i % 70)}`);
  for (let i = 0; i < 600; i += 20) {
    model.delete(keyOf(i));
    await db.delete(keyOf(i));
  }
  await db.flush();
  for (let i = 1; i < 600; i += 4) await put(keyOf(i), `third-${i}-${"c".repeat(i % 30)}`);
  for (let i = 0; i < 600; i += 14) await put(keyOf(i), `third-${i}`);
  await db.flush();
  await put(keyOf(3), "in-the-log");
  await db.close();
  const keys = Array.from({ length: 600 }, (_, i) => keyOf(i));
  const tables = (await names(fs)).filter((n) => n.endsWith(".sst")).map((n) => `${DIR}/${n}`);
  assert.equal(tables.length, 3);
  return { fs, model, keys, tables };
}

function expectedScan(model: Model, reverse: boolean): string[] {
  const out = [...model]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  return reverse ? out.reverse() : out;
}

interface Outcome {
  openFailed: boolean;
  /** Reads that failed with CORRUPTION naming the file. */
  corruptions: number;
}

/** Opens `fs` and reads everything; see the module comment for the rule. */
async function readEverything(
  fs: MemoryFileSystem,
  built: Built,
  damaged: string,
  what: string,
): Promise<Outcome> {
  let db: KvStore;
  try {
    db = await open(DIR, { fs });
  } catch (err) {
    assertCorruption(err, damaged, `${what}: open`);
    return { openFailed: true, corruptions: 0 };
  }
  let corruptions = 0;
  try {
    for (const k of built.keys) {
      let got: string | undefined;
      try {
        got = text(await db.get(k));
      } catch (err) {
        assertCorruption(err, damaged, `${what}: get ${k}`);
        corruptions++;
        continue;
      }
      assert.equal(got, built.model.get(k), `${what}: get ${k} returned a wrong value`);
    }
    for (const reverse of [false, true]) {
      const expected = expectedScan(built.model, reverse);
      const it = db.iterator({ reverse });
      let i = 0;
      try {
        for await (const [k, v] of it) {
          const got = `${text(k)}=${text(v)}`;
          if (got !== expected[i]) {
            assert.fail(
              `${what}: ${reverse ? "reverse " : ""}scan entry ${i}: expected ${expected[i]}, got ${got}`,
            );
          }
          i++;
        }
        assert.equal(i, expected.length, `${what}: ${reverse ? "reverse " : ""}scan ended early`);
      } catch (err) {
        if (err instanceof assert.AssertionError) throw err;
        assertCorruption(err, damaged, `${what}: ${reverse ? "reverse " : ""}scan at entry ${i}`);
        assert.equal(it.isClosed, true, `${what}: a failed iterator is closed`);
        corruptions++;
      }
    }
  } finally {
    await db.close();
  }
  return { openFailed: false, corruptions };
}

// ---- table layout ----

interface Region {
  name: "data" | "index" | "filter" | "properties" | "footer";
  start: number;
  end: number;
}

function tableRegions(bytes: Uint8Array, path: string): Region[] {
  const size = bytes.length;
  const footer: Footer = decodeFooter(bytes.subarray(size - FOOTER_SIZE), size, path);
  const trailer = 5;
  let dataEnd = Math.min(footer.index.offset, footer.properties.offset);
  if (footer.filter.size > 0) dataEnd = Math.min(dataEnd, footer.filter.offset);
  const block = (name: Region["name"], h: { offset: number; size: number }): Region => ({
    name,
    start: h.offset,
    end: h.offset + h.size + trailer,
  });
  const regions: Region[] = [
    { name: "data", start: 0, end: dataEnd },
    block("index", footer.index),
    block("properties", footer.properties),
    { name: "footer", start: size - FOOTER_SIZE, end: size },
  ];
  if (footer.filter.size > 0) regions.push(block("filter", footer.filter));
  return regions;
}

// ---- write-ahead log helpers ----

interface LogRecord {
  start: number;
  end: number;
}

async function logRecords(fs: MemoryFileSystem, path: string): Promise<LogRecord[]> {
  const file = await fs.openReadable(path);
  const records: LogRecord[] = [];
  try {
    await readLog(file, "absoluteConsistency", (_payload, start, end) => {
      records.push({ start, end });
    });
  } finally {
    await file.close();
  }
  return records;
}

/** A store whose only log holds `n` single-put records (key w0000.., value of `valueSize`). */
async function storeWithLog(n: number, valueSize: number) {
  const fs = new MemoryFileSystem();
  const db = await open(DIR, { fs });
  const wkey = (i: number) => `w${String(i).padStart(4, "0")}`;
  const wvalue = (i: number) => `${i}-${"v".repeat(valueSize)}`;
  for (let i = 0; i < n; i++) await db.put(wkey(i), wvalue(i));
  await db.close();
  const logs = (await names(fs)).filter((f) => f.endsWith(".log"));
  assert.equal(logs.length, 1);
  const path = `${DIR}/${logs[0]}`;
  const records = await logRecords(fs, path);
  assert.equal(records.length, n);
  return { fs, path, records, wkey, wvalue };
}

/** Which of the n keys a store opened on `fs` lacks; every present one must be right. */
async function missingKeys(
  db: KvStore,
  n: number,
  wkey: (i: number) => string,
  wvalue: (i: number) => string,
): Promise<number[]> {
  const missing: number[] = [];
  for (let i = 0; i < n; i++) {
    const v = text(await db.get(wkey(i)));
    if (v === undefined) missing.push(i);
    else assert.equal(v, wvalue(i), `${wkey(i)} has a wrong value`);
  }
  return missing;
}

// ---- tests ----

describe("damaged files", () => {
  for (const compression of ["none", "deflate"] as const) {
    test(`a flipped bit anywhere in a table (compression ${compression}) gives right answers or CORRUPTION naming the table, never a wrong value`, async (t) => {
      const seed = testSeed();
      const r = rng(seed);
      const built = await buildStore({ blockSize: 256, compression });
      const counts: Record<string, { cases: number; atOpen: number; onRead: number }> = {};
      try {
        for (const table of built.tables) {
          const bytes = built.fs.readFile(table);
          for (const region of tableRegions(bytes, table)) {
            const n = FLIPS[region.name];
            for (let c = 0; c < n; c++) {
              const offset = region.start + randInt(r, region.end - region.start);
              const bit = randInt(r, 8);
              const what = `${table} ${region.name} region [${region.start}, ${region.end}): bit ${bit} of byte ${offset}`;
              const fs = await damagedCopy(built.fs, table, flipBit(offset, bit));
              const outcome = await readEverything(fs, built, table, what);
              assert.ok(
                outcome.openFailed || outcome.corruptions > 0,
                `${what}: the damage went unreported`,
              );
              const count = counts[region.name] ?? { cases: 0, atOpen: 0, onRead: 0 };
              counts[region.name] = count;
              count.cases++;
              if (outcome.openFailed) count.atOpen++;
              else count.onRead++;
            }
          }
        }
      } catch (err) {
        throw new Error(
          `seed ${seed} (replay with KV_SEED=${seed}): ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
      t.diagnostic(`seed ${seed}: ${JSON.stringify(counts)}`);
      // Damage to the footer and the metadata blocks is found when the table is opened (the
      // store opens its tables at open), or at the latest on the first read of the table.
      for (const name of ["footer", "index", "filter", "properties"]) {
        assert.ok((counts[name]?.cases ?? 0) > 0, `no ${name} case ran`);
      }
    });
  }

  test("a table cut short (or emptied) makes the store fail with CORRUPTION naming it", async () => {
    const built = await buildStore({ blockSize: 256 });
    const table = built.tables[1]!;
    const size = built.fs.readFile(table).length;
    for (const keep of [0, 10, FOOTER_SIZE - 1, Math.floor(size / 2), size - 1]) {
      const fs = await damagedCopy(built.fs, table, (b) => b.slice(0, keep));
      const outcome = await readEverything(fs, built, table, `${table} cut to ${keep} bytes`);
      assert.ok(outcome.openFailed || outcome.corruptions > 0, `cut to ${keep}: unreported`);
    }
  });

  test("a flipped bit in a log record followed by records in later log blocks: CORRUPTION by default, skipped and reported with skipCorrupted", async () => {
    // ~4 blocks of 32 KiB; the damaged record is in the middle of the second block.
    const n = 400;
    const { fs, path, records, wkey, wvalue } = await storeWithLog(n, 300);
    const victim = records.findIndex((rec) => rec.start >= 32768 + 16384);
    assert.ok(victim > 0 && victim < n - 100, `victim record ${victim}`);
    const rec = records[victim]!;
    const offset = rec.start + 7 + Math.floor((rec.end - rec.start - 7) / 2);
    for (const mode of ["tolerateTornTail", "absoluteConsistency"] as const) {
      const copy = await damagedCopy(fs, path, flipBit(offset, 5));
      const before = await dataFiles(copy);
      await assert.rejects(open(DIR, { fs: copy, walRecoveryMode: mode }), (err) => {
        assertCorruption(err, path, `open in ${mode}`);
        assert.match((err as Error).message, /offset \d+/);
        return true;
      });
      assert.deepEqual(await dataFiles(copy), before, "a failed open deletes no log or table");
    }
    const copy = await damagedCopy(fs, path, flipBit(offset, 5));
    const db = await open(DIR, { fs: copy, walRecoveryMode: "skipCorrupted" });
    try {
      assert.ok(db.recovery.dropped.length >= 1, "the damage is reported");
      const dropped = db.recovery.dropped[0]!;
      assert.equal(dropped.file, path);
      assert.ok(dropped.offset <= offset && offset < dropped.offset + dropped.bytes);
      const missing = await missingKeys(db, n, wkey, wvalue);
      assert.ok(missing.includes(victim), "the damaged record is not replayed");
      // One damaged region: the missing records are consecutive, and everything after the
      // damaged block is kept.
      assert.equal(missing.at(-1)! - missing[0]! + 1, missing.length, `missing ${missing}`);
      assert.ok(missing.at(-1)! < n - 1, "the records after the damage are kept");
      for (let i = 0; i < missing[0]!; i++) assert.ok(!missing.includes(i));
      await db.put("after", "recovery");
      assert.equal(text(await db.get("after")), "recovery");
    } finally {
      await db.close();
    }
  });

  test("a flipped bit in a log record followed by more records in the same log block makes open fail with CORRUPTION by default", async () => {
    // A small log (one 32 KiB block): damage to record 25 of 50, each acknowledged durable.
    const n = 50;
    const { fs, path, records } = await storeWithLog(n, 40);
    assert.ok(records.at(-1)!.end < 32768);
    const failures: string[] = [];
    for (const victim of [1, 25, 48]) {
      const rec = records[victim]!;
      // A bit in the payload, and a bit in the header's length field.
      for (const offset of [rec.start + 7 + 10, rec.start + 4]) {
        const copy = await damagedCopy(fs, path, flipBit(offset, 2));
        try {
          const db = await open(DIR, { fs: copy });
          const report = JSON.stringify(db.recovery.dropped);
          await db.close();
          failures.push(
            `record ${victim}, byte ${offset}: open succeeded and dropped ${report} (${n - victim} acknowledged records)`,
          );
        } catch (err) {
          assertCorruption(err, path, `record ${victim}, byte ${offset}`);
        }
      }
    }
    assert.equal(
      failures.length,
      0,
      `damage followed by valid records was taken for a torn tail, losing acknowledged writes:\n  ${failures.join("\n  ")}`,
    );
  });

  test("with skipCorrupted, a damaged log record is skipped and the records after it in the same block are kept", async () => {
    const n = 50;
    const { fs, path, records, wkey, wvalue } = await storeWithLog(n, 40);
    const rec = records[25]!;
    const copy = await damagedCopy(fs, path, flipBit(rec.start + 7 + 10, 2));
    const db = await open(DIR, { fs: copy, walRecoveryMode: "skipCorrupted" });
    try {
      assert.ok(db.recovery.dropped.length >= 1, "the damage is reported");
      assert.equal(db.recovery.dropped[0]!.file, path);
      const missing = await missingKeys(db, n, wkey, wvalue);
      assert.deepEqual(missing, [25], "only the damaged record is lost");
    } finally {
      await db.close();
    }
  });

  test("an empty, truncated, garbled or missing CURRENT makes open fail with CORRUPTION, never an empty store", async () => {
    const built = await buildStore({});
    const current = `${DIR}/CURRENT`;
    const good = built.fs.readFile(current);
    assert.match(Buffer.from(good).toString("latin1"), /^MANIFEST-\d{6,}\n$/);
    const variants: Array<[string, (b: Uint8Array) => Uint8Array]> = [
      ["empty", () => new Uint8Array(0)],
      ["cut before the newline", (b) => b.slice(0, b.length - 1)],
      ["cut in the number", (b) => b.slice(0, 12)],
      ["cut to MANIFEST-", (b) => b.slice(0, 9)],
      ["with trailing garbage", (b) => Buffer.concat([b, Buffer.from("x")])],
      ["a second line", (b) => Buffer.concat([b, b])],
      ["zeros", (b) => new Uint8Array(b.length)],
    ];
    for (let i = 0; i < good.length; i++) {
      for (const bit of [0, 3, 6])
        variants.push([`bit ${bit} of byte ${i} flipped`, flipBit(i, bit)]);
    }
    for (const [what, change] of variants) {
      const fs = await damagedCopy(built.fs, current, change);
      const before = await dataFiles(fs);
      await assert.rejects(open(DIR, { fs }), (err) => {
        if (!isKvError(err, "CORRUPTION")) assert.fail(`CURRENT ${what}: got ${String(err)}`);
        return true;
      });
      assert.deepEqual(
        await dataFiles(fs),
        before,
        `CURRENT ${what}: a failed open deletes no data`,
      );
    }
    // A missing CURRENT next to logs and tables is damage, not a new store.
    const fs = await copyOf(built.fs);
    await fs.remove(current);
    await assert.rejects(open(DIR, { fs }), (err) => {
      assertCorruption(err, current, "missing CURRENT");
      return true;
    });
  });

  test("a manifest emptied or cut inside its first record makes open fail with CORRUPTION", async () => {
    const built = await buildStore({});
    const manifest = (await names(built.fs)).find((n) => n.startsWith("MANIFEST-"));
    assert.ok(manifest !== undefined);
    const path = `${DIR}/${manifest}`;
    const records = await logRecords(built.fs, path);
    assert.ok(records.length >= 4, `the manifest has ${records.length} records`);
    const first = records[0]!;
    for (const keep of [
      0,
      3,
      7,
      first.start + 8,
      Math.floor((first.start + first.end) / 2),
      first.end - 1,
    ]) {
      const fs = await damagedCopy(built.fs, path, (b) => b.slice(0, keep));
      const before = await dataFiles(fs);
      await assert.rejects(open(DIR, { fs }), (err) => {
        assertCorruption(err, path, `manifest cut to ${keep} bytes`);
        return true;
      });
      assert.deepEqual(
        await dataFiles(fs),
        before,
        `cut to ${keep}: a failed open deletes no data`,
      );
    }
    // A missing manifest too.
    const fs = await copyOf(built.fs);
    await fs.remove(path);
    await assert.rejects(open(DIR, { fs }), (err) => isKvError(err, "CORRUPTION"));
  });

  test("a flipped bit anywhere in the manifest makes open fail with CORRUPTION, never a store missing data", async () => {
    const built = await buildStore({});
    const manifest = (await names(built.fs)).find((n) => n.startsWith("MANIFEST-"));
    assert.ok(manifest !== undefined);
    const path = `${DIR}/${manifest}`;
    const size = built.fs.readFile(path).length;
    const records = await logRecords(built.fs, path);
    const failures: string[] = [];
    for (let offset = 0; offset < size; offset++) {
      const fs = await damagedCopy(built.fs, path, flipBit(offset, offset % 8));
      const record = records.findIndex((rec) => offset < rec.end);
      let db: KvStore;
      try {
        db = await open(DIR, { fs });
      } catch (err) {
        assertCorruption(err, path, `manifest byte ${offset}`);
        continue;
      }
      try {
        let wrong = 0;
        for (const k of built.keys) if (text(await db.get(k)) !== built.model.get(k)) wrong++;
        if (wrong > 0) {
          const tables = (await names(fs)).filter((n) => n.endsWith(".sst")).length;
          failures.push(
            `byte ${offset} (record ${record} of ${records.length}): opened with ${wrong} wrong reads, ${tables} of 3 table files left`,
          );
        }
      } finally {
        await db.close();
      }
    }
    assert.equal(
      failures.length,
      0,
      `${failures.length} of ${size} single-bit flips of ${path} opened a store missing data ` +
        `(and deleted the table files its damaged manifest no longer lists), e.g.\n  ${failures.slice(0, 6).join("\n  ")}`,
    );
  });
});
