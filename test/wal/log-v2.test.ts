/**
 * Log format version 2 (docs/format/wal.md, "Version 2"): fragments carry synced-end, the
 * offset known durable when they were framed, and the reader uses it to tell a hole left
 * in unsynced preallocated space by a power loss (the torn tail, dropped) from damage to
 * synced data (reported). Version 1 logs are tested in log.test.ts and read as before.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { readSyncedEnd } from "../../src/wal/fragment-walk.js";
import {
  BLOCK_SIZE,
  FRAGMENT_V2_FIRST,
  FRAGMENT_V2_FULL,
  FRAGMENT_V2_LAST,
  FRAGMENT_V2_MARK,
  FRAGMENT_V2_MIDDLE,
  fragmentVersion,
  HEADER_SIZE,
  LOG_FORMAT_VERSION,
  V2_HEADER_SIZE,
} from "../../src/wal/log-format.js";
import { type LogReadReport, readLog, type WalRecoveryMode } from "../../src/wal/log-reader.js";
import { encodeRecords, framedLength, LogWriter } from "../../src/wal/log-writer.js";
import { rng } from "../support/random.js";
import { ByteReadableFile, ByteWritableFile } from "./byte-files.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function payload(seed: number, n: number): Uint8Array {
  const random = rng(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
}

interface Read {
  records: Uint8Array[];
  starts: number[];
  report: LogReadReport;
}

async function read(bytes: Uint8Array, mode: WalRecoveryMode, syncedEnd?: number): Promise<Read> {
  const records: Uint8Array[] = [];
  const starts: number[] = [];
  const report = await readLog(
    new ByteReadableFile(bytes, "db/000009.log"),
    mode,
    (p, start) => {
      records.push(p);
      starts.push(start);
    },
    syncedEnd === undefined ? {} : { syncedEnd },
  );
  return { records, starts, report };
}

async function corruption(
  bytes: Uint8Array,
  mode: WalRecoveryMode,
  syncedEnd?: number,
): Promise<string> {
  try {
    await read(bytes, mode, syncedEnd);
  } catch (err) {
    assert.ok(isKvError(err, "CORRUPTION"), String(err));
    return err.message;
  }
  return assert.fail(`expected CORRUPTION in ${mode}`);
}

/**
 * A version 2 log written by a LogWriter: `groups` of records, each group flushed as one
 * append and synced when its flag says so. Returns the bytes, each record's start and end.
 */
async function writeV2(
  groups: ReadonlyArray<{ records: Uint8Array[]; sync: boolean }>,
): Promise<{ bytes: Uint8Array; starts: number[]; ends: number[] }> {
  const file = new ByteWritableFile();
  const writer = new LogWriter(file, { formatVersion: 2 });
  const starts: number[] = [];
  const ends: number[] = [];
  for (const g of groups) {
    for (const r of g.records) {
      const before = writer.size;
      const left = BLOCK_SIZE - (before % BLOCK_SIZE);
      starts.push(left < V2_HEADER_SIZE ? before + left : before);
      writer.addRecord(r);
      ends.push(writer.size);
    }
    if (g.sync) await writer.sync();
    else writer.flush();
  }
  return { bytes: file.contents(), starts, ends };
}

function zeroed(bytes: Uint8Array, from: number, to: number): Uint8Array {
  const out = bytes.slice();
  out.fill(0, from, to);
  return out;
}

describe("log format version 2: the writer", () => {
  test("is the version the store writes; the header is 13 bytes with types 5..9", () => {
    assert.equal(LOG_FORMAT_VERSION, 2);
    assert.equal(V2_HEADER_SIZE, HEADER_SIZE + 6);
    for (const t of [
      FRAGMENT_V2_FULL,
      FRAGMENT_V2_FIRST,
      FRAGMENT_V2_MIDDLE,
      FRAGMENT_V2_LAST,
      FRAGMENT_V2_MARK,
    ]) {
      assert.equal(fragmentVersion(t), 2);
    }
    assert.equal(fragmentVersion(0), 0);
    assert.equal(fragmentVersion(10), 0);
  });

  test("writes the bytes of the examples in docs/format/wal.md", () => {
    assert.equal(
      hex(encodeRecords([text("hello")], 0, { formatVersion: 2 })),
      "28a331b4050005000000000000" + "68656c6c6f",
    );
    assert.equal(
      hex(encodeRecords([text("world")], 18, { formatVersion: 2, syncedEnd: 18 })),
      "b0ed21d0050005120000000000" + "776f726c64",
    );
    assert.equal(
      hex(encodeRecords([new Uint8Array(0)], 0, { formatVersion: 2 })),
      "e5d6f7a5000005000000000000",
    );
    // 8 bytes left in the block: fewer than a 13-byte header, so a zero trailer.
    assert.equal(
      hex(encodeRecords([text("hello")], 32760, { formatVersion: 2, syncedEnd: 100 })),
      `${"00".repeat(8)}4970f029050005640000000000${"68656c6c6f"}`,
    );
    // 16 bytes left: a FIRST fragment with 3 bytes, then LAST in the next block.
    assert.equal(
      hex(encodeRecords([text("hello")], 32752, { formatVersion: 2, syncedEnd: 100 })),
      "e06fd0ea030006640000000000" + "68656c" + "a7b17f56020008640000000000" + "6c6f",
    );
  });

  test("frames each record with the offset the last completed sync covered, never its own bytes", async () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    writer.addRecord(text("a"));
    writer.addRecord(text("b"));
    writer.flush();
    assert.equal(writer.syncedEnd, 0); // flushed, not synced
    await writer.sync();
    const firstEnd = file.size;
    assert.equal(writer.syncedEnd, firstEnd);
    writer.addRecord(payload(1, 3 * BLOCK_SIZE)); // spans blocks: every fragment claims it
    writer.syncBlocking();
    writer.appendRecord(text("c"));
    const bytes = file.contents();
    const claims: Array<[number, number]> = [];
    await readLog(new ByteReadableFile(bytes), "absoluteConsistency", () => {});
    // Walk the fragments by hand: every header's synced-end is at most its own offset.
    for (let p = 0; p < bytes.length; ) {
      const left = BLOCK_SIZE - (p % BLOCK_SIZE);
      if (left < V2_HEADER_SIZE) {
        p += left;
        continue;
      }
      const length = bytes[p + 4]! | (bytes[p + 5]! << 8);
      assert.equal(fragmentVersion(bytes[p + 6]!), 2);
      claims.push([p, readSyncedEnd(bytes, p)]);
      p += V2_HEADER_SIZE + length;
    }
    for (const [offset, claim] of claims) assert.ok(claim <= offset, `${claim} > ${offset}`);
    assert.deepEqual(
      claims.map(([, c]) => c),
      [0, 0, firstEnd, firstEnd, firstEnd, firstEnd, writer.syncedEnd],
    );
    assert.ok(writer.syncedEnd > firstEnd);
  });

  test("framedLength and encodeRecords agree with the writer for version 2", () => {
    const random = rng(3);
    for (let i = 0; i < 200; i++) {
      const size = Math.floor(random() ** 2 * 80_000);
      const at = Math.floor(random() * BLOCK_SIZE);
      assert.equal(
        encodeRecords([new Uint8Array(size)], at, { formatVersion: 2 }).length,
        framedLength(size, at, V2_HEADER_SIZE),
      );
    }
  });

  test("a block trailer of up to 12 bytes reads as the trailer, the next record in the next block", async () => {
    for (const left of [1, 6, 7, 12]) {
      const first = new Uint8Array(BLOCK_SIZE - V2_HEADER_SIZE - left).fill(7);
      const { bytes, starts } = await writeV2([{ records: [first, text("next")], sync: false }]);
      assert.equal(starts[1], BLOCK_SIZE);
      assert.deepEqual(bytes.subarray(BLOCK_SIZE - left, BLOCK_SIZE), new Uint8Array(left));
      const got = await read(bytes, "absoluteConsistency");
      assert.deepEqual(got.records, [first, text("next")]);
    }
  });

  test("rejects a syncedEnd past the file's size and an unknown format version", () => {
    const file = new ByteWritableFile();
    assert.throws(
      () => new LogWriter(file, { formatVersion: 2, syncedEnd: 1 }),
      (e: unknown) => isKvError(e, "INVALID_ARGUMENT"),
    );
    assert.throws(
      () => new LogWriter(file, { formatVersion: 3 as 2 }),
      (e: unknown) => isKvError(e, "INVALID_ARGUMENT"),
    );
  });

  test("seal syncs and adds a sync mark claiming everything before it; the mark is no record", async () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    writer.appendRecord(text("x"));
    writer.appendRecord(text("y"));
    const end = file.size;
    await writer.seal();
    const bytes = file.contents();
    assert.equal(bytes.length, end + V2_HEADER_SIZE);
    assert.equal(bytes[end + 6], FRAGMENT_V2_MARK);
    assert.equal(readSyncedEnd(bytes, end), end);
    const got = await read(bytes, "absoluteConsistency");
    assert.deepEqual(got.records, [text("x"), text("y")]);
    assert.equal(got.report.goodEndOffset, bytes.length);
    assert.equal(got.report.formatVersion, 2);
    // A version 1 writer's seal is a sync.
    const v1 = new ByteWritableFile();
    const w1 = new LogWriter(v1);
    w1.appendRecord(text("x"));
    await w1.seal();
    assert.equal(v1.size, HEADER_SIZE + 1);
  });
});

describe("log format version 2: the reader", () => {
  // Records 0..3 synced, 4..7 appended after the last sync (claims: end of record 3).
  const synced = [0, 1, 2, 3].map((i) => payload(10 + i, 300 + i * 50));
  const unsynced = [4, 5, 6, 7].map((i) => payload(10 + i, 400 + i * 30));
  const build = () =>
    writeV2([
      { records: synced.slice(0, 2), sync: true },
      { records: synced.slice(2), sync: true },
      { records: unsynced, sync: false },
    ]);

  test("a zero hole in the unsynced part followed by valid records is the torn tail: a prefix survives", async () => {
    const log = await build();
    // Record 5 never reached the disk (its page was lost), 6 and 7 did.
    const bytes = zeroed(log.bytes, log.starts[5]!, log.ends[5]!);
    for (const mode of ["tolerateTornTail", "skipCorrupted", "pointInTime"] as const) {
      const got = await read(bytes, mode);
      assert.deepEqual(got.records, [...synced, unsynced[0]!], mode);
      assert.equal(got.report.tornTailBytes, log.ends[7]! - log.starts[5]!, mode);
      assert.deepEqual(
        got.report.dropped.map((d) => [d.offset, d.bytes]),
        [[log.starts[5]!, log.ends[7]! - log.starts[5]!]],
      );
      assert.match(got.report.dropped[0]!.reason, /unsynced tail/);
      assert.equal(got.report.goodEndOffset, log.ends[4]);
      assert.equal(got.report.stoppedAt, undefined);
    }
    const message = await corruption(bytes, "absoluteConsistency");
    assert.match(message, new RegExp(`torn log tail at offset ${log.starts[5]}\\b`));
  });

  test("a torn sector or garbage where the unsynced part begins, with records after it, is the torn tail too", async () => {
    const log = await build();
    const bytes = log.bytes.slice();
    bytes.set(payload(99, 40), log.starts[4]! + 3); // garbage inside record 4's header
    const got = await read(bytes, "tolerateTornTail");
    assert.deepEqual(got.records, synced);
    assert.equal(got.report.tornTailBytes, log.ends[7]! - log.starts[4]!);
  });

  test("damage below the proven durable offset is corruption, with the proof in the message", async () => {
    const log = await build();
    // Record 1 was synced (records 2.. claim the end of record 1 or more).
    const bytes = zeroed(log.bytes, log.starts[1]!, log.ends[1]!);
    const message = await corruption(bytes, "tolerateTornTail");
    assert.match(message, new RegExp(`log corrupted at offset ${log.starts[1]}:`));
    assert.match(message, /written after the log was synced through offset \d+/);
    await corruption(bytes, "absoluteConsistency");
    const got = await read(bytes, "skipCorrupted");
    assert.deepEqual(got.records, [synced[0]!, ...synced.slice(2), ...unsynced]);
    assert.deepEqual(
      got.report.dropped.map((d) => [d.offset, d.bytes]),
      [[log.starts[1]!, log.starts[2]! - log.starts[1]!]],
    );
    assert.equal(got.report.tornTailBytes, 0);
    const pit = await read(bytes, "pointInTime");
    assert.deepEqual(pit.records, [synced[0]!]);
    assert.equal(pit.report.stoppedAt, log.starts[1]);
  });

  test("the proof may come after records that prove nothing: the reader looks ahead", async () => {
    // Records 0 and 1 in one synced group (both claim 0), then record 2 claiming their end.
    const a = payload(1, 500);
    const b = payload(2, 500);
    const c = payload(3, 500);
    const log = await writeV2([
      { records: [a, b], sync: true },
      { records: [c], sync: false },
    ]);
    const bytes = zeroed(log.bytes, 0, log.ends[0]!);
    const message = await corruption(bytes, "tolerateTornTail");
    assert.match(message, new RegExp(`the record at offset ${log.starts[2]} was written after`));
    const got = await read(bytes, "skipCorrupted");
    assert.deepEqual(got.records, [b, c]); // b kept, though it proves nothing itself
    // Without record 2 nothing proves record 0 synced: the tail, b dropped with it.
    const cut = bytes.subarray(0, log.ends[1]!);
    const tail = await read(cut, "tolerateTornTail");
    assert.deepEqual(tail.records, []);
    assert.equal(tail.report.tornTailBytes, log.ends[1]);
  });

  test("a proof in a later block is found (the look-ahead walks the blocks after the damage)", async () => {
    const records = Array.from({ length: 30 }, (_, i) => payload(200 + i, 3000));
    const log = await writeV2([
      { records: records.slice(0, 25), sync: true },
      { records: records.slice(25), sync: false },
    ]);
    assert.ok(log.starts[25]! > 2 * BLOCK_SIZE);
    const bytes = zeroed(log.bytes, log.starts[3]!, log.ends[3]!);
    await corruption(bytes, "tolerateTornTail");
    const got = await read(bytes, "skipCorrupted");
    assert.equal(got.records.length, 29);
  });

  test("a fragment claiming its own bytes durable is damage, not proof", async () => {
    const log = await build();
    // Re-encode record 7 claiming its own end: it checks out, but no writer frames that.
    const start = log.starts[7]!;
    const liar = encodeRecords([unsynced[3]!], start, {
      formatVersion: 2,
      syncedEnd: log.ends[7]!,
    });
    const bytes = log.bytes.slice();
    bytes.set(liar, start);
    const got = await read(bytes, "tolerateTornTail");
    assert.deepEqual(got.records, [...synced, ...unsynced.slice(0, 3)]);
    assert.match(
      got.report.dropped[0]!.reason,
      /claims the log synced through offset \d+, past its own start/,
    );
  });

  test("the caller's syncedEnd proves damage synced: a hole or a torn end is then corruption", async () => {
    const log = await build();
    const hole = zeroed(log.bytes, log.starts[5]!, log.ends[5]!);
    const everything = Number.POSITIVE_INFINITY;
    assert.match(await corruption(hole, "tolerateTornTail", everything), /whole log was synced/);
    const torn = log.bytes.subarray(0, log.ends[7]! - 5);
    assert.match(await corruption(torn, "tolerateTornTail", everything), /whole log was synced/);
    const skipped = await read(torn, "skipCorrupted", everything);
    assert.equal(skipped.report.tornTailBytes, 0);
    assert.equal(skipped.report.dropped.length, 1);
    const pit = await read(torn, "pointInTime", everything);
    assert.equal(pit.report.stoppedAt, log.starts[7]);
    // Below the caller's offset only: past it the tail is a tail.
    const got = await read(hole, "tolerateTornTail", log.starts[5]!);
    assert.equal(got.records.length, 5);
    // Zeros after the last record stay the clean end.
    const zeros = new Uint8Array(log.bytes.length + 5000);
    zeros.set(log.bytes);
    assert.equal((await read(zeros, "tolerateTornTail", everything)).records.length, 8);
  });

  test("after a clean close (seal) damage in the last records is corruption", async () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    for (const r of unsynced) writer.appendRecord(r); // never synced but by the seal
    await writer.seal();
    const bytes = file.contents();
    bytes[HEADER_SIZE + 20]! ^= 1; // inside the first record
    await corruption(bytes, "tolerateTornTail");
  });
});

/**
 * Power loss on the in-memory file system: records appended into preallocated space,
 * synced now and then; the crash keeps each unsynced write (or zero-fill) independently,
 * so pages reach the disk out of order and holes appear before surviving records.
 */
async function powerLossTrial(
  seed: number,
  formatVersion: 1 | 2,
): Promise<{ error: unknown; synced: number; read: number; written: number }> {
  const fs = new MemoryFileSystem();
  await fs.mkdir("/d");
  await fs.syncDir("/");
  const file = await fs.createWritable("/d/1.log");
  await file.sync();
  await fs.syncDir("/d");
  const writer = new LogWriter(file, { formatVersion, preallocateBytes: 64 * 1024 });
  const random = rng(seed);
  const records: Uint8Array[] = [];
  let synced = 0;
  const count = 20 + Math.floor(random() * 60);
  for (let i = 0; i < count; i++) {
    const r = payload(seed * 1000 + i, 1 + Math.floor(random() ** 2 * 6000));
    records.push(r);
    writer.addRecord(r);
    if (random() < 0.5) writer.flush();
    if (random() < 0.2) {
      await writer.sync();
      synced = records.length;
    }
  }
  writer.flush();
  const clone = fs.crashClone({
    unsyncedRetention: 0.2 + random() * 0.7,
    seed,
    appendsSurviveAsPrefix: false,
    tornWriteProbability: 0.3,
  });
  const got: Uint8Array[] = [];
  try {
    const f = await clone.openReadable("/d/1.log");
    await readLog(f, "tolerateTornTail", (p) => got.push(p));
  } catch (error) {
    return { error, synced, read: got.length, written: records.length };
  }
  assert.ok(got.length >= synced, `seed ${seed}: ${got.length} records read, ${synced} synced`);
  for (let i = 0; i < got.length; i++) {
    assert.deepEqual(got[i], records[i], `seed ${seed}: record ${i} is no prefix of history`);
  }
  return { error: undefined, synced, read: got.length, written: records.length };
}

describe("log format version 2 after a power loss in preallocated space", () => {
  test("tolerateTornTail opens every crash state and returns the synced records and a prefix after them", async (t) => {
    let partial = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const r = await powerLossTrial(seed, 2);
      assert.equal(r.error, undefined, `seed ${seed}: ${String(r.error)}`);
      if (r.read > r.synced && r.read < r.written) partial++;
    }
    t.diagnostic(`${partial} of 300 crash states kept part of the unsynced records`);
    assert.ok(partial > 10, `only ${partial} trials kept part of the unsynced records`);
  });

  test("version 1 framing cannot tell such holes from damage: the same crashes make it refuse", async (t) => {
    let refused = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const r = await powerLossTrial(seed, 1);
      if (r.error !== undefined) {
        assert.ok(isKvError(r.error, "CORRUPTION"), String(r.error));
        refused++;
      }
    }
    t.diagnostic(`version 1 refused ${refused} of 300 crash states`);
    assert.ok(refused > 10, `version 1 refused only ${refused} of 300 crash states`);
  });
});
