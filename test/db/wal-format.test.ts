/**
 * The store's write-ahead log in log format version 2 (docs/format/wal.md): logs written
 * in version 1 (today's data directories) open and replay as before and are never
 * appended to; new logs are version 2 and preallocated by default; after a power loss a
 * hole in the unsynced preallocated part is the torn tail, while damage to data a later
 * record (or a later log) proves synced is CORRUPTION.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { encodeSinglePut, setBatchSequence } from "../../src/batch/write-batch.js";
import { replayLogs } from "../../src/db/recovery.js";
import {
  isKvError,
  type KvStore,
  MemoryFileSystem,
  type OpenOptions,
  open,
} from "../../src/index.js";
import { crc32c, maskCrc } from "../../src/util/crc32c.js";
import { logFilePath } from "../../src/version/file-names.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
import { HEADER_SIZE } from "../../src/wal/log-format.js";
import { readLog } from "../../src/wal/log-reader.js";
import { encodeRecords, LogWriter } from "../../src/wal/log-writer.js";
import { copyOfFiles } from "../support/memory-copy.js";
import { tempDir } from "../support/temp-dir.js";

const DIR = "/db";
const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

const copyOf = (src: MemoryFileSystem) => copyOfFiles(src, DIR);

async function logNames(fs: MemoryFileSystem): Promise<string[]> {
  return (await fs.list(DIR)).filter((n) => n.endsWith(".log"));
}

/** The records of a log file: payloads, starts and ends, and what the reader reported. */
async function records(fs: MemoryFileSystem, path: string) {
  const payloads: Uint8Array[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const file = await fs.openReadable(path);
  const report = await readLog(file, "skipCorrupted", (p, s, e) => {
    payloads.push(p);
    starts.push(s);
    ends.push(e);
  });
  await file.close();
  return { payloads, starts, ends, report };
}

/**
 * Turns the store in DIR into one a build before log format version 2 wrote: every log
 * re-encoded in version 1 (same records), the manifest's format version set to 1.
 */
async function asVersion1(fs: MemoryFileSystem): Promise<void> {
  for (const name of await logNames(fs)) {
    const path = `${DIR}/${name}`;
    fs.writeFile(path, encodeRecords((await records(fs, path)).payloads));
  }
  const current = Buffer.from(fs.readFile(`${DIR}/CURRENT`))
    .toString("utf8")
    .trim();
  const manifest = fs.readFile(`${DIR}/${current}`).slice();
  // The first record is one FULL fragment holding the snapshot: 07 02 (FORMAT_VERSION 2).
  assert.deepEqual([manifest[6], manifest[7], manifest[8]], [1, 7, 2]);
  manifest[8] = 1;
  const length = manifest[4]! | (manifest[5]! << 8);
  const crc = maskCrc(crc32c(manifest, 4, HEADER_SIZE + length));
  manifest.set([crc & 0xff, (crc >>> 8) & 0xff, (crc >>> 16) & 0xff, crc >>> 24], 0);
  fs.writeFile(`${DIR}/${current}`, manifest);
}

async function fill(db: KvStore, from: number, to: number, sync = true): Promise<void> {
  for (let i = from; i < to; i++) await db.put(`k${i}`, `value-${i}`, { sync });
}

async function assertKeys(db: KvStore, from: number, to: number, what: string): Promise<void> {
  for (let i = from; i < to; i++) {
    assert.equal(text(await db.get(`k${i}`)), `value-${i}`, `${what}: k${i}`);
  }
}

async function assertCorruption(fs: MemoryFileSystem, options: OpenOptions = {}): Promise<string> {
  try {
    const db = await open(DIR, { fs, ...options });
    await db.close();
  } catch (err) {
    assert.ok(isKvError(err, "CORRUPTION"), String(err));
    return err.message;
  }
  return assert.fail("the store opened");
}

describe("the store's write-ahead log format", () => {
  test("a version 1 store opens and replays exactly as before; its log is not appended to", async () => {
    const fs = new MemoryFileSystem();
    const db = await open(DIR, { fs });
    await fill(db, 0, 40);
    await db.close();
    await asVersion1(fs);
    const [v1Name] = await logNames(fs);
    const v1Path = `${DIR}/${v1Name}`;
    const v1Bytes = fs.readFile(v1Path);

    const again = await open(DIR, { fs });
    assert.equal(again.recovery.batches, 40);
    assert.deepEqual(again.recovery.dropped, []);
    await assertKeys(again, 0, 40, "replayed");
    assert.notEqual(logFilePath(DIR, again.stats().logNumber), v1Path);
    await fill(again, 40, 50);
    await again.close();
    assert.deepEqual(fs.readFile(v1Path), v1Bytes, "the version 1 log is unchanged");
    const newest = await records(
      fs,
      logFilePath(DIR, Number((await logNames(fs)).at(-1)!.slice(0, 6))),
    );
    assert.equal(newest.report.formatVersion, 2);

    const third = await open(DIR, { fs });
    await assertKeys(third, 0, 50, "after writing version 2 beside it");
    await third.close();
  });

  test("a version 1 log with a torn tail drops it as before; one with damage before valid records is CORRUPTION", async () => {
    const fs = new MemoryFileSystem();
    const db = await open(DIR, { fs });
    await fill(db, 0, 20);
    await db.close();
    await asVersion1(fs);
    const path = `${DIR}/${(await logNames(fs))[0]}`;
    const log = await records(fs, path);
    const bytes = fs.readFile(path);

    const torn = await copyOf(fs);
    torn.writeFile(path, bytes.subarray(0, log.ends[19]! - 3));
    const opened = await open(DIR, { fs: torn });
    assert.equal(opened.recovery.batches, 19);
    assert.equal(opened.recovery.tornTailBytes, log.ends[19]! - 3 - log.starts[19]!);
    await assertKeys(opened, 0, 19, "torn");
    assert.equal(await opened.get("k19"), undefined);
    await opened.close();

    const damaged = bytes.slice();
    damaged[log.starts[3]! + HEADER_SIZE + 2]! ^= 0x10;
    fs.writeFile(path, damaged);
    assert.match(await assertCorruption(fs), /valid log data follows them/);
  });

  test("logs are preallocated by default: the file is physically larger than its records", async () => {
    const fs = new MemoryFileSystem();
    const db = await open(DIR, { fs });
    await fill(db, 0, 10);
    const path = logFilePath(DIR, db.stats().logNumber);
    await db.close();
    const log = await records(fs, path);
    assert.ok(log.report.goodEndOffset < 2000, String(log.report.goodEndOffset));
    assert.ok((await fs.fileSize(path)) >= 1 << 20, String(await fs.fileSize(path)));

    const off = new MemoryFileSystem();
    const small = await open(DIR, { fs: off, walPreallocateBytes: 0 });
    await fill(small, 0, 10);
    const smallPath = logFilePath(DIR, small.stats().logNumber);
    await small.close();
    assert.equal(
      await off.fileSize(smallPath),
      (await records(off, smallPath)).report.goodEndOffset,
    );

    // On the real file system too, and the store reopens over the zeros.
    const tmp = tempDir("kv-wal-format-");
    try {
      const real = await open(tmp.path, { fs: new RealFileSystem() });
      await fill(real, 0, 10);
      const realPath = logFilePath(tmp.path, real.stats().logNumber);
      await real.close();
      assert.ok((await new RealFileSystem().fileSize(realPath)) >= 1 << 20);
      const back = await open(tmp.path);
      await assertKeys(back, 0, 10, "real");
      assert.equal(back.recovery.tornTailBytes, 0);
      await back.close();
    } finally {
      tmp.remove();
    }
  });

  test("after a power loss, a hole in the unsynced part keeps exactly the synced writes and the contiguous ones after them", async () => {
    const fs = new MemoryFileSystem();
    const db = await open(DIR, { fs });
    await fill(db, 0, 10, true);
    await fill(db, 10, 20, false); // appended into preallocated space, never synced
    const path = logFilePath(DIR, db.stats().logNumber);
    // The power fails now: everything reached the disk but record 15, whose page was lost.
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const log = await records(crashed, path);
    const bytes = crashed.readFile(path).slice();
    bytes.fill(0, log.starts[15]!, log.ends[15]!);
    crashed.writeFile(path, bytes);
    await db.close();

    const again = await open(DIR, { fs: crashed });
    await assertKeys(again, 0, 15, "kept");
    for (let i = 15; i < 20; i++) assert.equal(await again.get(`k${i}`), undefined, `k${i}`);
    assert.equal(again.recovery.tornTails, 1);
    assert.ok(again.recovery.tornTailBytes > 0);
    // Writes go on after the cut, and a reopen keeps them.
    await fill(again, 100, 110);
    await again.close();
    const third = await open(DIR, { fs: crashed });
    await assertKeys(third, 0, 15, "kept again");
    await assertKeys(third, 100, 110, "written after");
    assert.equal(third.recovery.tornTailBytes, 0);
    await third.close();
  });

  test("after a power loss, damage to a record a later record proves synced is CORRUPTION", async () => {
    const fs = new MemoryFileSystem();
    const db = await open(DIR, { fs });
    await fill(db, 0, 10, true);
    const path = logFilePath(DIR, db.stats().logNumber);
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    await db.close();
    const log = await records(crashed, path);
    for (const damage of ["zeros", "bit"] as const) {
      const bytes = crashed.readFile(path).slice();
      if (damage === "zeros") bytes.fill(0, log.starts[4]!, log.ends[4]!);
      else bytes[log.starts[4]! + 20]! ^= 0x04;
      const copy = await copyOf(crashed);
      copy.writeFile(path, bytes);
      const message = await assertCorruption(copy);
      assert.match(message, new RegExp(`log corrupted at offset ${log.starts[4]}:`), damage);
      assert.match(message, /was written after the log was synced through offset/, damage);
      // skipCorrupted keeps every other record.
      const salvaged = await open(DIR, { fs: copy, walRecoveryMode: "skipCorrupted" });
      await assertKeys(salvaged, 0, 4, damage);
      await assertKeys(salvaged, 5, 10, damage);
      await salvaged.close();
    }
  });

  test("damage in a log followed by a log holding records is CORRUPTION (the older one was synced whole)", async () => {
    // Two logs as the store leaves them: the first never synced by a write (sync: false)
    // but synced whole before the second got a record (the memtable switch does that).
    const build = async (formatVersion: 1 | 2): Promise<MemoryFileSystem> => {
      const fs = new MemoryFileSystem();
      await fs.mkdir(DIR);
      for (const [number, keys] of [
        [7, ["a", "b", "c"]],
        [9, ["d"]],
      ] as const) {
        const file = await fs.createWritable(logFilePath(DIR, number));
        const writer = new LogWriter(file, { formatVersion });
        keys.forEach((k, i) => {
          const rep = encodeSinglePut(k, `value-${k}`);
          setBatchSequence(rep, number * 10 + i);
          writer.addRecord(rep);
        });
        await writer.sync();
        await writer.close();
      }
      // The first log's last record cut short: a torn tail if nothing came after it.
      const first = logFilePath(DIR, 7);
      fs.writeFile(first, fs.readFile(first).subarray(0, fs.readFile(first).length - 3));
      return fs;
    };
    const v2 = await build(2);
    await assert.rejects(replayLogs(v2, DIR, [7, 9], "tolerateTornTail"), (err: unknown) => {
      assert.ok(isKvError(err, "CORRUPTION"), String(err));
      assert.match(err.message, /000007\.log: log corrupted at offset \d+: .*whole log was synced/);
      return true;
    });
    const alone = await replayLogs(v2, DIR, [7], "tolerateTornTail");
    assert.equal(alone.report.batches, 2);
    assert.ok(alone.report.tornTailBytes > 0);
    const skipped = await replayLogs(v2, DIR, [7, 9], "skipCorrupted");
    assert.equal(skipped.report.batches, 3);
    assert.equal(skipped.report.tornTailBytes, 0);
    // Version 1 logs are read as before: the torn tail of the older one is dropped.
    const v1 = await replayLogs(await build(1), DIR, [7, 9], "tolerateTornTail");
    assert.equal(v1.report.batches, 3);
    assert.equal(v1.report.tornTails, 1);
  });

  test("a log read at open and not written to again is synced before writes go to a new one", async () => {
    // Records a killed process left in the page cache only (appended, never synced), an
    // open that starts a new log (skipCorrupted does), durable writes to that one, and a
    // power loss: the old log must not come back with holes its successor "proves" synced.
    for (let seed = 1; seed <= 20; seed++) {
      const fs = new MemoryFileSystem();
      const db = await open(DIR, { fs });
      await fill(db, 0, 10);
      const path = logFilePath(DIR, db.stats().logNumber);
      await db.close();
      const end = (await records(fs, path)).report.goodEndOffset;
      const file = await fs.openWritable(path, end);
      for (let i = 10; i < 30; i++) {
        const rep = encodeSinglePut(`k${i}`, `value-${i}`);
        setBatchSequence(rep, i + 1);
        file.append(encodeRecords([rep], file.size, { formatVersion: 2, syncedEnd: end }));
      }
      await file.close();

      const again = await open(DIR, { fs, walRecoveryMode: "skipCorrupted" });
      await assertKeys(again, 0, 30, `seed ${seed}: after the process crash`);
      assert.notEqual(logFilePath(DIR, again.stats().logNumber), path);
      await fill(again, 30, 40, true);
      const crashed = fs.crashClone({ unsyncedRetention: 0.5, seed });
      await again.close();
      const back = await open(DIR, { fs: crashed });
      await assertKeys(back, 0, 40, `seed ${seed}: every write replayed before the new log's`);
      await back.close();
    }
  });

  test("a reopened log continues after its records, a clean close adds a sync mark, and wal dump stays clean", async () => {
    const fs = new MemoryFileSystem();
    for (let round = 0; round < 3; round++) {
      const db = await open(DIR, { fs });
      await fill(db, round * 10, round * 10 + 10);
      await db.close();
    }
    const logs = await logNames(fs);
    assert.equal(logs.length, 1);
    const log = await records(fs, `${DIR}/${logs[0]}`);
    assert.equal(log.payloads.length, 30);
    assert.deepEqual(log.report.dropped, []);
    const db = await open(DIR, { fs });
    await assertKeys(db, 0, 30, "three rounds");
    await db.close();
  });
});
