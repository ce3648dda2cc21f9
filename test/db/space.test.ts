/**
 * Space reclaimed by compaction: every key is overwritten many times and half of them are
 * deleted; right when `compactRange()` resolves (it waits for the obsolete-file sweep), the
 * data directory (real file system, worker compactions) must take less than twice the live
 * data (live keys x (16-byte key + 100-byte value)) and hold only the tables the version
 * lists: overwritten versions, tombstones, old tables and old logs are all gone.
 *
 * KV_STRESS=1: 100,000 keys written 20 times (232 MB of writes). The default run scales the
 * keyspace down to 20,000 keys (still written 20 times) so it takes a few seconds; the
 * bound is the same. Writes are sync: false batches of 1000.
 */
import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type KvStore, open } from "../../src/index.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const KEYS = STRESS ? 100_000 : 20_000;
const ROUNDS = 20;
const BATCH = 1000;
const KEY_BYTES = 16;
const VALUE_BYTES = 100;

const dirs: Array<{ remove: () => void }> = [];
after(() => {
  for (const d of dirs) d.remove();
});

/** A 16-byte key. */
const keyOf = (i: number) => `k${String(i).padStart(KEY_BYTES - 1, "0")}`;

/** A 100-byte value for key i in round `round`, not compressible to nothing. */
function valueFor(i: number, round: number, r: () => number): Buffer {
  const v = Buffer.alloc(VALUE_BYTES);
  v.write(`${round}:${i}:`);
  for (let j = 12; j < VALUE_BYTES; j++) v[j] = 97 + randInt(r, 26);
  return v;
}

function directoryBytes(dir: string): { bytes: number; files: string[] } {
  let bytes = 0;
  const files = readdirSync(dir);
  for (const f of files) bytes += statSync(join(dir, f)).size;
  return { bytes, files };
}

/** Table files in `dir`, and those the store's version lists. */
function tableCounts(db: KvStore, dir: string): { files: number; listed: number } {
  const files = readdirSync(dir).filter((f) => f.endsWith(".sst")).length;
  return { files, listed: db.stats().levelFiles.reduce((a, b) => a + b, 0) };
}

describe("space amplification", () => {
  test(`after ${ROUNDS} overwrites of ${KEYS} keys and deleting half of them, compactRange leaves the data directory under twice the live data`, async (t) => {
    const seed = testSeed();
    const r = rng(seed);
    const d = tempDir("kv-space-");
    dirs.push(d);
    const dir = join(d.path, "db");
    const db = await open(dir, { compactionMode: "worker" });
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (let start = 0; start < KEYS; start += BATCH) {
          const batch = db.batch();
          for (let i = start; i < Math.min(KEYS, start + BATCH); i++) {
            batch.put(keyOf(i), valueFor(i, round, r));
          }
          await db.write(batch, { sync: false });
        }
      }
      // Delete the odd keys.
      for (let start = 0; start < KEYS; start += BATCH) {
        const batch = db.batch();
        for (let i = start + 1; i < Math.min(KEYS, start + BATCH); i += 2) batch.delete(keyOf(i));
        await db.write(batch, { sync: false });
      }
      const beforeCompaction = directoryBytes(dir).bytes;
      await db.compactRange();
      // Measured at once: no wait for a background sweep.
      const tables = tableCounts(db, dir);
      assert.equal(tables.files, tables.listed, "table files left that the version does not list");

      const live = Math.ceil(KEYS / 2);
      const liveBytes = live * (KEY_BYTES + VALUE_BYTES);
      const { bytes, files } = directoryBytes(dir);
      const s = db.stats();
      t.diagnostic(
        `seed ${seed}: ${KEYS} keys x ${ROUNDS} rounds, ${live} live (${liveBytes} bytes); ` +
          `directory ${beforeCompaction} bytes before compactRange, ${bytes} after ` +
          `(${(bytes / liveBytes).toFixed(2)}x live; ${files.length} files, levels ` +
          `${s.levelFiles.join("/")}); ${s.flushes} flushes, ${s.compaction.compactions} ` +
          `compactions, write amplification ${s.writeAmplification.toFixed(2)}`,
      );
      assert.ok(
        bytes < 2 * liveBytes,
        `the directory holds ${bytes} bytes for ${liveBytes} bytes of live data ` +
          `(${(bytes / liveBytes).toFixed(2)}x): ${files.join(" ")}`,
      );
      // Still the right data.
      for (let k = 0; k < 200; k++) {
        const i = randInt(r, KEYS);
        const v = await db.get(keyOf(i));
        if (i % 2 === 1) assert.equal(v, undefined, `${keyOf(i)} was deleted`);
        else assert.ok(v?.toString().startsWith(`${ROUNDS - 1}:${i}:`), `${keyOf(i)}`);
      }
      let count = 0;
      for await (const _ of db.iterator({ keysOnly: true })) count++;
      assert.equal(count, live, "live keys");
    } finally {
      await db.close();
    }
  });
});
