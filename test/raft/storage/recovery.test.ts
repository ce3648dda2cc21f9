/**
 * Recovery of the durable Raft log: an unsynced tail (torn record, garbage, a hole left by
 * writes that reached the disk out of order) is dropped silently and leaves a prefix;
 * damage to synced bytes (proven by a later record's durable offset, by the next segment's
 * header, or by a clean close) is reported with its offset, the entries before it are
 * kept, the term and vote survive, the repair mark is set and persists until entries from a
 * leader reach it, and the damaged segment is set aside, never truncated silently.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../../src/errors.js";
import { RaftLogStorage } from "../../../src/raft/storage/index.js";
import { encodeLogRecord } from "../../../src/raft/storage/log-record.js";
import { readSegment } from "../../../src/raft/storage/segment-reader.js";
import type { Entry } from "../../../src/raft/types.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { encodeRecords } from "../../../src/wal/log-writer.js";

const DIR = "/raft";
const enc = new TextEncoder();

function entry(index: number, term: number): Entry {
  return { index, term, type: "normal", data: enc.encode(`entry ${index} of term ${term}`) };
}

const open = (fs: MemoryFileSystem, segmentBytes = 64 * 1024 * 1024) =>
  RaftLogStorage.open(fs, DIR, { segmentBytes });

/** A log of entries 1..n (term 1, one synced save each), then term 5 with a vote for 2. */
async function buildLog(
  fs: MemoryFileSystem,
  n: number,
  options: { segmentBytes?: number; close?: boolean } = {},
): Promise<RaftLogStorage> {
  const st = await open(fs, options.segmentBytes);
  await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
  for (let i = 1; i <= n; i++) {
    await st.save({ entries: [entry(i, 1)], hardState: { term: 1, vote: 1, commit: i - 1 } });
  }
  await st.save({ hardState: { term: 5, vote: 2, commit: n - 1 } });
  if (options.close ?? true) await st.close();
  return st;
}

/** The records of a segment with their offsets. */
async function recordsOf(fs: MemoryFileSystem, name: string) {
  const seq = Number(name.slice("segment-".length, "segment-".length + 16));
  return (await readSegment(fs, DIR, name, seq)).records;
}

/** The segment and record holding the save of entry `index`. */
async function findEntryRecord(fs: MemoryFileSystem, index: number) {
  for (const name of (await fs.list(DIR)).filter((n) => n.endsWith(".log"))) {
    for (const rec of await recordsOf(fs, name)) {
      const r = rec.record;
      if (r.kind === "save" && r.entries.some((e) => e.index === index)) return { name, rec };
    }
  }
  throw new Error(`no record for entry ${index}`);
}

function flipByte(fs: MemoryFileSystem, name: string, offset: number): void {
  const path = `${DIR}/${name}`;
  const bytes = fs.readFile(path);
  bytes[offset]! ^= 0x5a;
  fs.writeFile(path, bytes);
}

const lastIndexes = (st: RaftLogStorage) => `${st.firstIndex()}..${st.lastIndex()}`;

describe("raft log recovery", () => {
  test("a torn last record (a crash during its append) is dropped silently", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 6, { close: false });
    await st.save({ entries: [entry(7, 5)], hardState: { term: 5, vote: 2, commit: 5 } });
    const name = st.segmentNames().at(-1)!;
    const { rec } = await findEntryRecord(fs, 7);
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const path = `${DIR}/${name}`;
    crashed.writeFile(path, crashed.readFile(path).subarray(0, rec.start + 10));
    const again = await open(crashed);
    assert.equal(again.recovery.damage, undefined);
    assert.equal(again.recovery.tornTailBytes, 10);
    assert.equal(lastIndexes(again), "1..6");
    assert.deepEqual(again.initialState().hardState, { term: 5, vote: 2, commit: 5 });
    assert.equal(again.initialState().repair, undefined);
    await again.close();
    await st.close();
  });

  test("garbage after the last synced record is dropped silently", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 4, { close: false });
    const name = st.segmentNames().at(-1)!;
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const path = `${DIR}/${name}`;
    const junk = new Uint8Array(300).map((_, i) => (i * 37 + 11) & 0xff);
    const bytes = crashed.readFile(path);
    const grown = new Uint8Array(bytes.length + junk.length);
    grown.set(bytes);
    grown.set(junk, bytes.length);
    crashed.writeFile(path, grown);
    const again = await open(crashed);
    assert.equal(again.recovery.damage, undefined);
    assert.ok(again.recovery.tornTailBytes > 0);
    assert.equal(lastIndexes(again), "1..4");
    await again.close();
    await st.close();
  });

  test("a hole in unsynced writes before a later unsynced write that reached the disk leaves a prefix", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 4, { close: false });
    await st.save({
      entries: [entry(5, 5)],
      hardState: { term: 5, vote: 2, commit: 3 },
      mustSync: false,
    });
    await st.save({ entries: [entry(6, 5)], mustSync: false });
    await st.save({ entries: [entry(7, 5)], mustSync: false });
    const name = st.segmentNames().at(-1)!;
    const { rec } = await findEntryRecord(fs, 5);
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const path = `${DIR}/${name}`;
    const bytes = crashed.readFile(path);
    bytes.fill(0, rec.start, rec.end);
    crashed.writeFile(path, bytes);
    const again = await open(crashed);
    assert.equal(again.recovery.damage, undefined);
    assert.equal(lastIndexes(again), "1..4");
    assert.equal(again.initialState().repair, undefined);
    await again.close();
    await st.close();
  });

  test("damage to a synced record is reported; the entries before it, the term and the vote survive; repair is set", async () => {
    const fs = new MemoryFileSystem();
    await buildLog(fs, 10, { close: false });
    const { name, rec } = await findEntryRecord(fs, 5);
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    flipByte(crashed, name, rec.start + 12);
    let st = await open(crashed);
    const damage = st.recovery.damage;
    assert.ok(damage !== undefined, "damage reported");
    assert.equal(damage.segment, name);
    assert.equal(damage.offset, rec.start);
    assert.match(damage.reason, /checksum/);
    assert.ok(damage.droppedBytes > 0);
    assert.equal(lastIndexes(st), "1..4", "the entries before the damage are kept");
    assert.deepEqual(st.initialState().hardState, { term: 5, vote: 2, commit: 4 });
    assert.deepEqual(st.initialState().repair, { throughIndex: 10 });
    assert.deepEqual(st.recovery.repair, { throughIndex: 10 });
    assert.deepEqual(st.recovery.damagedSegments, [name]);
    const files = await crashed.list(DIR);
    assert.ok(files.includes(`${name}.damaged`), "the damaged segment is set aside, not removed");
    assert.ok(!files.includes(name));

    // The repair mark survives restarts (and power loss) until a leader's entries reach it.
    st = await RaftLogStorage.open(crashed.crashClone({ unsyncedRetention: 0 }), DIR).finally(() =>
      st.close(),
    );
    assert.equal(
      st.recovery.damage,
      undefined,
      "reported once: the damaged segment is not read again",
    );
    assert.deepEqual(st.initialState().repair, { throughIndex: 10 });
    assert.deepEqual(st.initialState().hardState, { term: 5, vote: 2, commit: 4 });
    assert.equal(lastIndexes(st), "1..4");
    const fixed = [];
    for (let i = 5; i <= 10; i++) fixed.push(entry(i, 5));
    await st.save({ entries: fixed.slice(0, 3), hardState: { term: 5, vote: 2, commit: 6 } });
    assert.deepEqual(st.initialState().repair, { throughIndex: 10 }, "not yet through 10");
    await st.save({ entries: fixed.slice(3), hardState: { term: 5, vote: 2, commit: 9 } });
    assert.equal(st.initialState().repair, undefined, "healed");
    await st.close();
  });

  test("damage in a sealed segment (proven by the next segment's header) is reported", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 30, { segmentBytes: 150 });
    assert.ok(st.segmentNames().length >= 4);
    const { name, rec } = await findEntryRecord(fs, 12);
    assert.notEqual(name, st.segmentNames().at(-1), "the record is in a sealed segment");
    flipByte(fs, name, rec.end - 1);
    const again = await open(fs, 150);
    assert.equal(again.recovery.damage?.segment, name);
    assert.equal(again.recovery.damage?.offset, rec.start);
    assert.equal(lastIndexes(again), "1..11");
    assert.deepEqual(again.initialState().repair, { throughIndex: 30 });
    assert.equal(again.initialState().hardState.term, 5);
    const damaged = again.recovery.damagedSegments;
    assert.ok(damaged.includes(name) && damaged.length >= 2, "it and the segments after it");
    await again.close();
  });

  test("damage to the last save before a clean close is reported: the close record proves it synced", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 5);
    const { name, rec } = await findEntryRecord(fs, 5);
    flipByte(fs, name, rec.end - 2);
    const again = await open(fs);
    assert.equal(again.recovery.damage?.offset, rec.start);
    assert.equal(lastIndexes(again), "1..4");
    assert.deepEqual(again.initialState().repair, { throughIndex: 5 });
    await again.close();
    await st.close();
  });

  test("a segment missing from the middle of the chain is reported, not papered over", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 30, { segmentBytes: 150 });
    const names = st.segmentNames();
    assert.ok(names.length >= 4);
    await fs.remove(`${DIR}/${names[names.length - 2]}`);
    const again = await open(fs, 150);
    assert.ok(again.recovery.damage !== undefined);
    assert.match(again.recovery.damage.reason, /missing/);
    assert.equal(again.lastIndex(), 0, "no entry after the gap can be trusted");
    assert.equal(again.initialState().hardState.term, 5);
    assert.deepEqual(again.initialState().repair, { throughIndex: 30 });
    await again.close();
  });

  test("a damaged header of a synced segment is reported", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 30, { segmentBytes: 150 });
    const names = st.segmentNames();
    flipByte(fs, names[1]!, 3);
    const again = await open(fs, 150);
    assert.equal(again.recovery.damage?.segment, names[1]);
    assert.equal(again.recovery.damage?.offset, 0);
    assert.ok(again.lastIndex() < 30);
    assert.deepEqual(again.initialState().repair, { throughIndex: 30 });
    await again.close();
  });

  test("after a process crash, what open read from the page cache is made durable before the new header relies on it", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 3);
    // The dead process's last save reached the page cache, not the disk.
    const name = st.segmentNames().at(-1)!;
    const file = await fs.openWritable(`${DIR}/${name}`);
    const record = encodeLogRecord({
      kind: "save",
      syncedEnd: file.size,
      lastIndex: 4,
      hardState: { term: 5, vote: 2, commit: 2 },
      snapshot: undefined,
      entries: [entry(4, 5)],
    });
    file.append(encodeRecords([record], file.size));
    await file.close();
    const restarted = await open(fs);
    assert.equal(restarted.lastIndex(), 4);
    // Then the power fails.
    const again = await open(fs.crashClone({ unsyncedRetention: 0 }));
    assert.equal(again.recovery.damage, undefined);
    assert.equal(again.lastIndex(), 4);
    await again.close();
    await restarted.close();
  });

  test("a new segment that never became durable (no readable record) is removed as a leftover", async () => {
    const fs = new MemoryFileSystem();
    const st = await buildLog(fs, 3);
    fs.writeFile(`${DIR}/segment-0000000000000099.log`, new Uint8Array(100).fill(0x33));
    const again = await open(fs);
    assert.equal(again.recovery.damage, undefined);
    assert.ok(again.recovery.removedSegments.includes("segment-0000000000000099.log"));
    assert.equal(again.lastIndex(), 3);
    assert.ok(!(await fs.list(DIR)).includes("segment-0000000000000099.log"));
    await again.close();
    await st.close();
  });

  test("a log of a newer format version fails to open with CORRUPTION", async () => {
    const fs = new MemoryFileSystem();
    const header = encodeLogRecord({
      kind: "header",
      syncedEnd: 0,
      lastIndex: 0,
      hardState: { term: 0, vote: 0, commit: 0 },
      seq: 1,
      previousSeq: 0,
      previousEnd: 0,
      compactIndex: 0,
      compactTerm: 0,
      lastTerm: 0,
      repairThrough: 0,
      snapshot: {
        metadata: { index: 0, term: 0, confState: { voters: [], learners: [] } },
        data: new Uint8Array(),
      },
      entries: [],
    });
    const newer = header.slice();
    newer[0] = 2;
    await fs.mkdir(DIR);
    fs.writeFile(`${DIR}/segment-0000000000000001.log`, encodeRecords([header, newer]));
    await assert.rejects(
      open(fs),
      (err) => isKvError(err, "CORRUPTION") && /version 2/.test(err.message),
    );
    // The lock was released: after the operator deals with it, the directory opens.
    await fs.remove(`${DIR}/segment-0000000000000001.log`);
    const st = await open(fs);
    await st.close();
  });
});
