import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { isKvError, type KvError } from "../../src/errors.js";
import { crc32c, maskCrc, unmaskCrc } from "../../src/util/crc32c.js";
import {
  BLOCK_SIZE,
  FRAGMENT_FIRST,
  FRAGMENT_FULL,
  FRAGMENT_LAST,
  FRAGMENT_MIDDLE,
  HEADER_SIZE,
  MAX_FRAGMENT_PAYLOAD,
} from "../../src/wal/log-format.js";
import { type LogReadReport, readLog, type WalRecoveryMode } from "../../src/wal/log-reader.js";
import { encodeRecords, framedLength, LogWriter } from "../../src/wal/log-writer.js";
import { rng } from "../support/random.js";
import { ByteReadableFile, ByteWritableFile } from "./byte-files.js";

const MODES: readonly WalRecoveryMode[] = [
  "tolerateTornTail",
  "absoluteConsistency",
  "skipCorrupted",
];

// ---- helpers ----

function randomBytes(random: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(random() * 256);
  return out;
}

/** Payloads of the given sizes with random (seeded) content. */
function payloadsOfSizes(sizes: readonly number[], seed = 1): Uint8Array[] {
  const random = rng(seed);
  return sizes.map((n) => randomBytes(random, n));
}

interface BuiltLog {
  bytes: Uint8Array;
  /** Offset of each record's first header. */
  starts: number[];
  /** Offset just after each record. */
  ends: number[];
}

/** Writes each payload with LogWriter.appendRecord into a fresh file. */
function buildLog(payloads: readonly Uint8Array[]): BuiltLog {
  const file = new ByteWritableFile();
  const writer = new LogWriter(file);
  const starts: number[] = [];
  const ends: number[] = [];
  for (const p of payloads) {
    const before = file.size;
    const skip = BLOCK_SIZE - (before % BLOCK_SIZE);
    starts.push(skip < HEADER_SIZE ? before + skip : before);
    writer.appendRecord(p);
    ends.push(file.size);
  }
  return { bytes: file.contents(), starts, ends };
}

interface ReadResult {
  records: Uint8Array[];
  starts: number[];
  ends: number[];
  report: LogReadReport;
}

async function read(bytes: Uint8Array, mode: WalRecoveryMode): Promise<ReadResult> {
  const records: Uint8Array[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const report = await readLog(new ByteReadableFile(bytes), mode, (payload, start, end) => {
    records.push(payload);
    starts.push(start);
    ends.push(end);
  });
  assert.equal(report.records, records.length);
  return { records, starts, ends, report };
}

/** Reads expecting CORRUPTION; returns the error. */
async function readFails(bytes: Uint8Array, mode: WalRecoveryMode): Promise<KvError> {
  let caught: unknown;
  try {
    await readLog(new ByteReadableFile(bytes, "db/000007.log"), mode, () => {});
  } catch (err) {
    caught = err;
  }
  assert.ok(isKvError(caught, "CORRUPTION"), `expected CORRUPTION, got ${String(caught)}`);
  assert.equal(caught.file, "db/000007.log");
  assert.match(caught.message, /db\/000007\.log/);
  return caught;
}

/** A valid fragment with the given type and payload (may break sequencing on purpose). */
function fragment(type: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_SIZE + payload.length);
  out[4] = payload.length & 0xff;
  out[5] = payload.length >>> 8;
  out[6] = type;
  out.set(payload, HEADER_SIZE);
  writeCrc(out, 0);
  return out;
}

/** Recomputes the CRC of the fragment whose header is at `at` (after editing it). */
function writeCrc(bytes: Uint8Array, at: number): void {
  const length = bytes[at + 4]! | (bytes[at + 5]! << 8);
  const crc = maskCrc(crc32c(bytes, at + 4, at + HEADER_SIZE + length));
  bytes[at] = crc & 0xff;
  bytes[at + 1] = (crc >>> 8) & 0xff;
  bytes[at + 2] = (crc >>> 16) & 0xff;
  bytes[at + 3] = crc >>> 24;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** A copy of bytes with bytes[at] xor-ed with `mask`. */
function flipByte(bytes: Uint8Array, at: number, mask = 0x5a): Uint8Array {
  const out = bytes.slice();
  out[at] = out[at]! ^ mask;
  return out;
}

function withZeros(bytes: Uint8Array, zeros: number): Uint8Array {
  return concat(bytes, new Uint8Array(zeros));
}

/** Ten records of 1..2000 bytes in block 0, then more so the log spans a few blocks. */
function mixedPayloads(count = 40, seed = 7): Uint8Array[] {
  const random = rng(seed);
  const sizes: number[] = [];
  for (let i = 0; i < count; i++) sizes.push(Math.floor(random() * 3000));
  return payloadsOfSizes(sizes, seed);
}

function assertRecords(actual: Uint8Array[], expected: readonly Uint8Array[]): void {
  assert.equal(actual.length, expected.length, "record count");
  for (let i = 0; i < expected.length; i++) {
    assert.deepEqual(actual[i], expected[i], `record ${i}`);
  }
}

// ---- writer ----

describe("the log writer", () => {
  test("round-trips records of every size class: empty, small, block-filling, spanning 1 to 3 blocks and 100 KiB", async () => {
    const random = rng(42);
    const sizes = [
      MAX_FRAGMENT_PAYLOAD, // at offset 0: exactly fills block 0
      0,
      1,
      100,
      MAX_FRAGMENT_PAYLOAD + 1, // spans into a second block
      2 * BLOCK_SIZE, // spans three blocks
      3 * BLOCK_SIZE + 5, // spans four or five blocks
      100 * 1024,
      0,
    ];
    for (let i = 0; i < 200; i++) sizes.push(Math.floor(random() ** 3 * 70_000));
    const payloads = payloadsOfSizes(sizes, 3);
    const log = buildLog(payloads);
    // The block-filling first record is one FULL fragment ending exactly at the block end.
    assert.equal(log.ends[0], BLOCK_SIZE);
    assert.equal(log.bytes[6], FRAGMENT_FULL);

    for (const mode of MODES) {
      const got = await read(log.bytes, mode);
      assertRecords(got.records, payloads);
      assert.deepEqual(got.starts, log.starts);
      assert.deepEqual(got.ends, log.ends);
      assert.equal(got.report.goodEndOffset, log.bytes.length);
      assert.equal(got.report.tornTailBytes, 0);
      assert.deepEqual(got.report.dropped, []);
    }
  });

  test("writes exactly the bytes encodeRecords gives and framedLength predicts", () => {
    const random = rng(5);
    for (let i = 0; i < 300; i++) {
      const size = Math.floor(random() ** 2 * 100_000);
      const blockOffset = Math.floor(random() * BLOCK_SIZE);
      const framed = encodeRecords([new Uint8Array(size)], blockOffset);
      assert.equal(
        framed.length,
        framedLength(size, blockOffset),
        `size ${size} at ${blockOffset}`,
      );
    }
    const payloads = mixedPayloads();
    assert.deepEqual(buildLog(payloads).bytes, encodeRecords(payloads));
  });

  test("pads a block trailer of fewer than 7 bytes with zeros and starts the next record in the next block", async () => {
    // First record ends 6 bytes before the block end.
    const first = new Uint8Array(BLOCK_SIZE - HEADER_SIZE - 6).fill(0xaa);
    const second = new TextEncoder().encode("next");
    const log = buildLog([first, second]);
    assert.equal(log.ends[0], BLOCK_SIZE - 6);
    assert.deepEqual(log.bytes.subarray(BLOCK_SIZE - 6, BLOCK_SIZE), new Uint8Array(6));
    assert.equal(log.starts[1], BLOCK_SIZE);
    assert.equal(log.bytes[BLOCK_SIZE + 6], FRAGMENT_FULL);
    assert.equal(log.bytes.length, BLOCK_SIZE + HEADER_SIZE + 4);
    assertRecords((await read(log.bytes, "absoluteConsistency")).records, [first, second]);
  });

  test("uses a 7-byte block tail for a header: an empty record there is FULL, a longer one starts with an empty FIRST", async () => {
    const first = new Uint8Array(BLOCK_SIZE - 2 * HEADER_SIZE).fill(1); // ends 7 bytes short
    const empty = new Uint8Array(0);
    const a = buildLog([first, empty]);
    assert.equal(a.starts[1], BLOCK_SIZE - HEADER_SIZE);
    assert.equal(a.bytes[BLOCK_SIZE - 1], FRAGMENT_FULL);
    assertRecords((await read(a.bytes, "absoluteConsistency")).records, [first, empty]);

    const long = new Uint8Array(10).fill(2);
    const b = buildLog([first, long]);
    assert.equal(b.bytes[BLOCK_SIZE - 1], FRAGMENT_FIRST);
    assert.equal(b.bytes[BLOCK_SIZE - 3], 0); // length 0
    assert.equal(b.bytes[BLOCK_SIZE + 6], FRAGMENT_LAST);
    assertRecords((await read(b.bytes, "absoluteConsistency")).records, [first, long]);
  });

  test("marks the fragments of a record spanning blocks FIRST, MIDDLE, LAST, each within its block", () => {
    const log = buildLog([new Uint8Array(2 * BLOCK_SIZE)]);
    assert.equal(log.bytes[6], FRAGMENT_FIRST);
    assert.equal(log.bytes[BLOCK_SIZE + 6], FRAGMENT_MIDDLE);
    assert.equal(log.bytes[2 * BLOCK_SIZE + 6], FRAGMENT_LAST);
    assert.equal(log.bytes.length, 2 * BLOCK_SIZE + 3 * HEADER_SIZE);
  });

  test("hands a group of added records to the file in one append", async () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file);
    const payloads = mixedPayloads(30);
    for (const p of payloads) writer.addRecord(p);
    assert.equal(file.appendCalls, 0);
    assert.equal(writer.size, encodeRecords(payloads).length);
    writer.flush();
    assert.equal(file.appendCalls, 1);
    assert.equal(writer.pendingBytes, 0);
    assert.deepEqual(file.contents(), encodeRecords(payloads));
    writer.flush(); // nothing pending: no append
    assert.equal(file.appendCalls, 1);
  });

  test("sync flushes what is pending and datasyncs once", async () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file);
    writer.addRecord(new Uint8Array(10));
    writer.addRecord(new Uint8Array(20));
    await writer.sync();
    assert.equal(file.appendCalls, 1);
    assert.equal(file.datasyncCalls, 1);
    assert.equal(file.size, 2 * HEADER_SIZE + 30);
  });

  test("continues an existing log at the block offset derived from the file size", async () => {
    const first = mixedPayloads(25, 11);
    const second = mixedPayloads(25, 12);
    const file = new ByteWritableFile();
    const w1 = new LogWriter(file);
    for (const p of first) w1.appendRecord(p);
    assert.notEqual(file.size % BLOCK_SIZE, 0);
    const w2 = new LogWriter(file);
    assert.equal(w2.blockOffset, file.size % BLOCK_SIZE);
    for (const p of second) w2.appendRecord(p);
    const got = await read(file.contents(), "absoluteConsistency");
    assertRecords(got.records, [...first, ...second]);
  });

  test("after a torn tail, cutting at goodEndOffset and appending again gives a clean log", async () => {
    const payloads = mixedPayloads(20, 13);
    const log = buildLog(payloads);
    const torn = log.bytes.subarray(0, log.ends[18]! + 100); // 100 bytes of record 19
    const first = await read(torn, "tolerateTornTail");
    assert.equal(first.report.goodEndOffset, log.ends[18]);

    const file = new ByteWritableFile();
    file.append(torn);
    await file.truncate(first.report.goodEndOffset);
    const writer = new LogWriter(file);
    const more = mixedPayloads(5, 14);
    for (const p of more) writer.appendRecord(p);
    const again = await read(file.contents(), "absoluteConsistency");
    assertRecords(again.records, [...payloads.slice(0, 19), ...more]);
  });

  test("preallocates ahead of the log end, re-extends within half of it, and appends overwrite the zeros", async () => {
    const file = new ByteWritableFile();
    const preallocateBytes = 64 * 1024;
    const writer = new LogWriter(file, { preallocateBytes });
    const payloads = payloadsOfSizes(new Array<number>(100).fill(3000), 21);
    for (const p of payloads) {
      writer.appendRecord(p);
      // The file always extends at least half the preallocation past the log's end.
      assert.ok(file.physicalSize >= file.size + preallocateBytes / 2);
    }
    // Re-extended only every ~32 KiB of appends, not on every append.
    assert.ok(file.preallocations.length >= 8 && file.preallocations.length <= 12);
    const physical = file.physicalContents();
    assert.ok(physical.length > file.size);
    for (const mode of MODES) {
      const got = await read(physical, mode);
      assertRecords(got.records, payloads);
      assert.equal(got.report.goodEndOffset, file.size);
      assert.equal(got.report.tornTailBytes, 0);
      assert.deepEqual(got.report.dropped, []);
    }
  });

  test("refuses further writes with READ_ONLY after a failed append", () => {
    const file = new ByteWritableFile();
    const writer = new LogWriter(file);
    writer.addRecord(new Uint8Array(5));
    file.failNextAppend = new Error("EIO: i/o error");
    assert.throws(
      () => writer.flush(),
      (err: unknown) => isKvError(err, "IO_ERROR"),
    );
    assert.throws(
      () => writer.addRecord(new Uint8Array(1)),
      (err: unknown) => isKvError(err, "READ_ONLY") && err.file === file.path,
    );
    assert.throws(
      () => writer.flush(),
      (err: unknown) => isKvError(err, "READ_ONLY"),
    );
  });

  test("rejects a block offset outside [0, BLOCK_SIZE) and a negative preallocation", () => {
    const file = new ByteWritableFile();
    for (const blockOffset of [-1, BLOCK_SIZE, 1.5]) {
      assert.throws(
        () => new LogWriter(file, { blockOffset }),
        (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
      );
    }
    assert.throws(
      () => new LogWriter(file, { preallocateBytes: -1 }),
      (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
    );
  });
});

// ---- reader: the end of the log ----

describe("the log reader at the end of the log", () => {
  test("an empty file has no records and no damage in any mode", async () => {
    for (const mode of MODES) {
      const got = await read(new Uint8Array(0), mode);
      assert.deepEqual(got.report, {
        goodEndOffset: 0,
        records: 0,
        tornTailBytes: 0,
        dropped: [],
        stoppedAt: undefined,
        formatVersion: undefined,
      });
    }
  });

  test("an all-zero header is never a valid record", async () => {
    // The stored CRC of a zero header is 0; unmasked it is not the CRC of any zero header.
    for (let type = 0; type <= 255; type++) {
      assert.notEqual(unmaskCrc(0), crc32c(new Uint8Array([0, 0, type])));
    }
    assert.notEqual(maskCrc(crc32c(new Uint8Array(3))), 0);
    for (const mode of MODES) {
      const got = await read(new Uint8Array(HEADER_SIZE), mode);
      assert.equal(got.report.records, 0);
      assert.deepEqual(got.report.dropped, []);
    }
  });

  test("a zero-filled tail (preallocated space) is a clean end in every mode", async () => {
    const payloads = mixedPayloads();
    const log = buildLog(payloads);
    for (const zeros of [1, 6, 7, 100, BLOCK_SIZE, 3 * BLOCK_SIZE + 17]) {
      for (const mode of MODES) {
        const got = await read(withZeros(log.bytes, zeros), mode);
        assertRecords(got.records, payloads);
        assert.equal(got.report.goodEndOffset, log.bytes.length);
        assert.equal(got.report.tornTailBytes, 0);
        assert.deepEqual(got.report.dropped, []);
      }
    }
  });

  test("hands every record over as its own copy, never a view into a reused buffer", async () => {
    const payloads = payloadsOfSizes([10, 50_000, 10, 70_000, 10], 17);
    const got = await read(buildLog(payloads).bytes, "absoluteConsistency");
    const buffers = new Set(got.records.map((r) => r.buffer));
    assert.equal(buffers.size, payloads.length);
    for (const r of got.records) assert.equal(r.byteLength, r.buffer.byteLength);
  });

  test("rejects an unknown recovery mode with INVALID_ARGUMENT", async () => {
    await assert.rejects(
      readLog(new ByteReadableFile(new Uint8Array(0)), "bestEffort" as WalRecoveryMode, () => {}),
      (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
    );
  });

  test("goodEndOffset excludes the zero trailer of the last record's block", async () => {
    const payloads = [new Uint8Array(BLOCK_SIZE - HEADER_SIZE - 3)];
    const bytes = withZeros(buildLog(payloads).bytes, 3 + BLOCK_SIZE);
    const got = await read(bytes, "absoluteConsistency");
    assert.equal(got.report.goodEndOffset, BLOCK_SIZE - 3);
  });
});

// ---- reader: torn tails ----

interface TornCase {
  name: string;
  payloads: Uint8Array[];
  bytes: Uint8Array;
  /** How many leading records survive. */
  survivors: number;
  /** Where the dropped tail starts. */
  tailOffset: number;
  tailBytes: number;
}

function tornCases(): TornCase[] {
  const payloads = mixedPayloads(30, 31);
  const log = buildLog(payloads);
  const last = payloads.length - 1;
  const lastStart = log.starts[last]!;
  const cases: TornCase[] = [];
  const cut = (name: string, bytes: Uint8Array, tailBytes = bytes.length - lastStart) =>
    cases.push({ name, payloads, bytes, survivors: last, tailOffset: lastStart, tailBytes });

  cut("a truncated header at the end of the file", log.bytes.subarray(0, lastStart + 3));
  cut("a truncated payload at the end of the file", log.bytes.subarray(0, lastStart + 10));
  {
    const b = log.bytes.subarray(0, lastStart + 10).slice();
    b[lastStart + 4] = 0x60; // length 0xea60 = 60000: past the end of the file and block
    b[lastStart + 5] = 0xea;
    cut("a length reaching past the end of the file", b);
  }
  cut("a bad checksum in the last record", flipByte(log.bytes, log.bytes.length - 1));
  {
    // The last record spans blocks; its final 512 bytes (a sector) are garbage.
    const big = [...payloads, randomBytes(rng(9), 50_000)];
    const bigLog = buildLog(big);
    const garbled = bigLog.bytes.slice();
    garbled.set(randomBytes(rng(10), 512), garbled.length - 512);
    cases.push({
      name: "a torn final sector of a record spanning blocks",
      payloads: big,
      bytes: garbled,
      survivors: big.length - 1,
      tailOffset: bigLog.starts[big.length - 1]!,
      tailBytes: garbled.length - bigLog.starts[big.length - 1]!,
    });
    const bigStart = bigLog.starts[big.length - 1]!;
    const firstFragmentEnd = (Math.floor(bigStart / BLOCK_SIZE) + 1) * BLOCK_SIZE;
    cases.push({
      name: "a record spanning blocks cut after its FIRST fragment",
      payloads: big,
      bytes: bigLog.bytes.subarray(0, firstFragmentEnd),
      survivors: big.length - 1,
      tailOffset: bigStart,
      tailBytes: firstFragmentEnd - bigStart,
    });
  }
  {
    // A torn record followed by preallocated zeros: the zeros are not counted.
    const b = withZeros(log.bytes.subarray(0, lastStart + 10), 5000);
    b[lastStart + 9] = 0xff; // make sure the cut ends on a non-zero byte
    cut("a torn record followed by preallocated zeros", b, 10);
  }
  {
    // Zeros where a record should start, then junk that is no valid fragment.
    const b = withZeros(log.bytes, 600);
    b.set(randomBytes(rng(3), 50), log.bytes.length + 512);
    cases.push({
      name: "zeros followed by junk that holds no valid fragment",
      payloads,
      bytes: b,
      survivors: payloads.length,
      tailOffset: log.bytes.length,
      tailBytes: 512 + 50,
    });
  }
  return cases;
}

describe("the log reader with a torn tail", () => {
  for (const c of tornCases()) {
    test(`tolerateTornTail drops ${c.name} silently and reports its size`, async () => {
      const got = await read(c.bytes, "tolerateTornTail");
      assertRecords(got.records, c.payloads.slice(0, c.survivors));
      assert.equal(got.report.tornTailBytes, c.tailBytes);
      assert.equal(got.report.dropped.length, 1);
      assert.equal(got.report.dropped[0]!.offset, c.tailOffset);
      assert.equal(got.report.dropped[0]!.bytes, c.tailBytes);
      assert.equal(got.report.goodEndOffset, got.ends[got.ends.length - 1] ?? 0);
    });

    test(`absoluteConsistency refuses ${c.name}, naming the offset`, async () => {
      const err = await readFails(c.bytes, "absoluteConsistency");
      assert.match(err.message, new RegExp(`torn log tail at offset ${c.tailOffset}\\b`));
    });

    test(`skipCorrupted keeps every record before ${c.name} and reports the dropped bytes`, async () => {
      const got = await read(c.bytes, "skipCorrupted");
      assertRecords(got.records, c.payloads.slice(0, c.survivors));
      assert.deepEqual(
        got.report.dropped.map((d) => [d.offset, d.bytes]),
        [[c.tailOffset, c.tailBytes]],
      );
      assert.equal(got.report.tornTailBytes, c.tailBytes);
    });
  }
});

// ---- reader: mid-log corruption ----

interface MidCase {
  name: string;
  bytes: Uint8Array;
  /** The records skipCorrupted returns. */
  kept: Uint8Array[];
  /** The region skipCorrupted drops. */
  dropped: [offset: number, bytes: number];
  reason: RegExp;
}

function midCases(): MidCase[] {
  const payloads = mixedPayloads(80, 51);
  const log = buildLog(payloads);
  // The first record starting at or after a block boundary.
  const firstFrom = (offset: number) => log.starts.findIndex((s) => s >= offset);
  // The reader resynchronises at the next valid fragment chain in the same block, so only
  // record 3 is lost.
  const blockZeroDamage = (): [number, number] => [log.starts[3]!, log.starts[4]! - log.starts[3]!];
  const allButThree = payloads.filter((_, i) => i !== 3);
  // Record 3 lives in block 0, and record 4 follows it there.
  const cases: MidCase[] = [
    {
      name: "a bad checksum in a middle record",
      bytes: flipByte(log.bytes, log.starts[3]! + HEADER_SIZE + 1),
      kept: allButThree,
      dropped: blockZeroDamage(),
      reason: /checksum mismatch/,
    },
  ];
  {
    const b = log.bytes.slice();
    b[log.starts[3]! + 6] = 200; // type 200, CRC recomputed: only the type is wrong
    writeCrc(b, log.starts[3]!);
    cases.push({
      name: "an unknown type byte with a matching checksum",
      bytes: b,
      kept: allButThree,
      dropped: blockZeroDamage(),
      reason: /unknown fragment type 200/,
    });
    cases.push({
      name: "a damaged type byte",
      bytes: flipByte(log.bytes, log.starts[3]! + 6, 0x04),
      kept: allButThree,
      dropped: blockZeroDamage(),
      reason: /checksum mismatch/,
    });
  }
  {
    // A whole block of zeros in the middle of the log.
    const b = log.bytes.slice();
    b.fill(0, BLOCK_SIZE, 2 * BLOCK_SIZE);
    const firstAfter = firstFrom(2 * BLOCK_SIZE);
    const firstLost = log.starts.findIndex((_, i) => log.ends[i]! > BLOCK_SIZE);
    // The record crossing into block 1 is lost from its start; so is the one crossing into
    // block 2 (its LAST fragment is an orphan and is dropped with it).
    const orphanEnd = log.starts[firstAfter]!;
    cases.push({
      name: "a zeroed block in the middle",
      bytes: b,
      kept: payloads.filter(
        (_, i) => log.ends[i]! <= BLOCK_SIZE || log.starts[i]! >= 2 * BLOCK_SIZE,
      ),
      dropped: [log.starts[firstLost]!, orphanEnd - log.starts[firstLost]!],
      reason: /zero-filled region|inside the record/,
    });
  }
  {
    // A record spanning three blocks, damaged in its MIDDLE fragment, records around it.
    const big = [payloads[0]!, randomBytes(rng(4), 3 * BLOCK_SIZE), payloads[1]!, payloads[2]!];
    const bigLog = buildLog(big);
    const middleAt = BLOCK_SIZE + 1000; // inside block 1: the MIDDLE fragment's payload
    cases.push({
      name: "damage in the MIDDLE fragment of a record spanning blocks",
      bytes: flipByte(bigLog.bytes, middleAt),
      kept: [big[0]!, big[2]!, big[3]!],
      dropped: [bigLog.starts[1]!, bigLog.starts[2]! - bigLog.starts[1]!],
      reason: /checksum mismatch in fragment at offset 32768, inside the record starting at offset/,
    });
  }
  {
    // An orphan MIDDLE and LAST (their FIRST is missing) before valid records.
    const a = new TextEncoder().encode("orphan");
    const b = concat(
      fragment(FRAGMENT_MIDDLE, a),
      fragment(FRAGMENT_LAST, a),
      fragment(FRAGMENT_FULL, a),
    );
    cases.push({
      name: "MIDDLE and LAST fragments without a FIRST",
      bytes: b,
      kept: [a],
      dropped: [0, 2 * (HEADER_SIZE + a.length)],
      reason: /MIDDLE fragment at offset 0 without a FIRST fragment/,
    });
  }
  {
    const x = new TextEncoder().encode("first-half");
    const y = new TextEncoder().encode("whole");
    const b = concat(fragment(FRAGMENT_FIRST, x), fragment(FRAGMENT_FULL, y));
    cases.push({
      name: "a FULL fragment while a record is open",
      bytes: b,
      kept: [y],
      dropped: [0, HEADER_SIZE + x.length],
      reason: /has no LAST fragment \(a FULL fragment follows/,
    });
    const c = concat(
      fragment(FRAGMENT_FIRST, x),
      fragment(FRAGMENT_FIRST, y),
      fragment(FRAGMENT_LAST, y),
    );
    const yy = concat(y, y);
    cases.push({
      name: "a FIRST fragment while a record is open",
      bytes: c,
      kept: [yy],
      dropped: [0, HEADER_SIZE + x.length],
      reason: /has no LAST fragment \(a FIRST fragment follows/,
    });
  }
  return cases;
}

describe("the log reader with mid-log corruption", () => {
  for (const c of midCases()) {
    test(`tolerateTornTail refuses ${c.name}, naming the offset and the bytes it would drop`, async () => {
      const err = await readFails(c.bytes, "tolerateTornTail");
      assert.match(err.message, new RegExp(`offset ${c.dropped[0]}:`));
      assert.match(err.message, /; \d+ bytes up to offset \d+ would be dropped/);
      assert.match(err.message, c.reason);
    });

    test(`absoluteConsistency refuses ${c.name}`, async () => {
      const err = await readFails(c.bytes, "absoluteConsistency");
      assert.match(err.message, new RegExp(`offset ${c.dropped[0]}:`));
    });

    test(`skipCorrupted returns the records around ${c.name} and reports the dropped region`, async () => {
      const got = await read(c.bytes, "skipCorrupted");
      assertRecords(got.records, c.kept);
      assert.equal(got.report.dropped.length, 1);
      const d = got.report.dropped[0]!;
      assert.deepEqual([d.offset, d.bytes], c.dropped);
      assert.match(d.reason, c.reason);
      assert.equal(got.report.tornTailBytes, 0);
      assert.equal(got.report.goodEndOffset, got.ends[got.ends.length - 1]);
    });
  }

  test("a corrupted length claiming 60000 bytes is damage found without reading past its block", async () => {
    const payloads = mixedPayloads(40, 61);
    const log = buildLog(payloads);
    const at = log.starts[2]!;
    const bytes = log.bytes.slice();
    bytes[at + 4] = 0x60; // 60000 = 0xea60
    bytes[at + 5] = 0xea;
    const file = new ByteReadableFile(bytes);
    const dropped: number[] = [];
    await assert.rejects(
      readLog(file, "tolerateTornTail", () => {}),
      /exceeds the \d+ bytes left in its block/,
    );
    for (const r of file.reads) {
      assert.equal(r.position % BLOCK_SIZE, 0);
      assert.ok(r.length <= BLOCK_SIZE);
    }
    const got = await read(bytes, "skipCorrupted");
    for (const d of got.report.dropped) dropped.push(d.offset, d.bytes);
    // Reading resumes at the next record in the same block.
    assert.deepEqual(dropped, [at, log.starts[3]! - at]);
  });

  test("skipCorrupted reports every damaged region of a log damaged in several places", async () => {
    const payloads = mixedPayloads(80, 71);
    const log = buildLog(payloads);
    const inBlock0 = payloads.findIndex((p) => p.length > 10);
    const inBlock2 = log.starts.findIndex((s, i) => s > 2 * BLOCK_SIZE && payloads[i]!.length > 10);
    let bytes = flipByte(log.bytes, log.starts[inBlock0]! + HEADER_SIZE + 3);
    bytes = flipByte(bytes, log.starts[inBlock2]! + HEADER_SIZE + 3);
    const got = await read(bytes, "skipCorrupted");
    assert.deepEqual(
      got.report.dropped.map((d) => d.offset),
      [log.starts[inBlock0], log.starts[inBlock2]],
    );
    // Every record returned was written, in order.
    let j = 0;
    for (const r of got.records) {
      while (j < payloads.length && !equalBytes(payloads[j]!, r)) j++;
      assert.ok(j < payloads.length, "a returned record was never written");
      j++;
    }
  });
});

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

// ---- recovery-mode matrix ----

describe("the recovery-mode matrix", () => {
  test("a log cut at 0%, 33%, 66%, 99% and 100% recovers exactly a prefix of its records in tolerateTornTail", async () => {
    const payloads = mixedPayloads(60, 81);
    payloads.splice(30, 0, randomBytes(rng(8), 70_000)); // one record spanning blocks
    const log = buildLog(payloads);
    for (const fraction of [0, 0.33, 0.66, 0.99, 1]) {
      const cut = Math.floor(log.bytes.length * fraction);
      const bytes = log.bytes.subarray(0, cut);
      const got = await read(bytes, "tolerateTornTail");
      const complete = log.ends.filter((e) => e <= cut).length;
      assertRecords(got.records, payloads.slice(0, complete));
      assert.equal(got.report.goodEndOffset, complete === 0 ? 0 : log.ends[complete - 1]);
      const skipped = await read(bytes, "skipCorrupted");
      assertRecords(skipped.records, payloads.slice(0, complete));
      if (fraction === 0 || fraction === 1) {
        assertRecords((await read(bytes, "absoluteConsistency")).records, skipped.records);
      } else {
        await readFails(bytes, "absoluteConsistency");
      }
    }
  });

  test("every cut of a log recovers a prefix ending at the last complete record", async () => {
    const payloads = mixedPayloads(30, 91);
    payloads.splice(10, 0, randomBytes(rng(2), 40_000));
    const log = buildLog(payloads);
    for (let cut = 0; cut <= log.bytes.length; cut += 89) {
      const bytes = log.bytes.subarray(0, cut);
      const got = await read(bytes, "tolerateTornTail");
      const complete = log.ends.filter((e) => e <= cut).length;
      assert.equal(got.records.length, complete, `cut at ${cut}`);
      assert.equal(got.report.goodEndOffset, complete === 0 ? 0 : log.ends[complete - 1]);
      const atRecordEnd = cut === 0 || log.ends.includes(cut);
      if (atRecordEnd) {
        assert.equal(got.report.tornTailBytes, 0);
        assert.equal((await read(bytes, "absoluteConsistency")).records.length, complete);
      } else if (got.report.tornTailBytes > 0) {
        await readFails(bytes, "absoluteConsistency");
      } else {
        // Cut inside a block's zero trailer: only zeros follow the last record.
        assert.ok(bytes.subarray(got.report.goodEndOffset).every((b) => b === 0));
      }
    }
  });

  test("a damaged byte anywhere never yields a record that was not written, nor a hole in tolerateTornTail", async () => {
    const payloads = mixedPayloads(25, 101);
    payloads.splice(12, 0, randomBytes(rng(6), 45_000));
    const log = buildLog(payloads);
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: log.bytes.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        fc.constantFrom(...MODES),
        async (at, mask, mode) => {
          const bytes = flipByte(log.bytes, at, mask);
          let got: ReadResult;
          try {
            got = await read(bytes, mode);
          } catch (err) {
            assert.ok(isKvError(err, "CORRUPTION"));
            assert.notEqual(mode, "skipCorrupted");
            return;
          }
          // Not thrown: in the strict modes only a tail can be damaged, so what is read is a
          // prefix; skipCorrupted returns a subsequence.
          let j = 0;
          for (const r of got.records) {
            while (j < payloads.length && !equalBytes(payloads[j]!, r)) {
              assert.equal(mode, "skipCorrupted", "a hole in the recovered records");
              j++;
            }
            assert.ok(j < payloads.length, "a returned record was never written");
            j++;
          }
          assert.equal(got.records.length < payloads.length, got.report.dropped.length > 0);
        },
      ),
      { numRuns: 300, seed: 12345 },
    );
  });
});
