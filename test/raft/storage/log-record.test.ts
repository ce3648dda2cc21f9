/**
 * The records of the durable Raft log: every kind round-trips, the bytes of the example in
 * docs/format/raft-log.md are what the storage writes, and decoding refuses what does not
 * decode.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isRaftError } from "../../../src/raft/errors.js";
import { RaftLogStorage } from "../../../src/raft/storage/index.js";
import {
  decodeLogRecord,
  encodeLogRecord,
  type LogRecord,
} from "../../../src/raft/storage/log-record.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";

const enc = new TextEncoder();
const hs = { term: 2 ** 40, vote: 3, commit: 12345 };
const snapshot = {
  metadata: { index: 99, term: 7, confState: { voters: [1, 2, 3], learners: [9] } },
  data: enc.encode("descriptor"),
};
const entries = [
  { index: 100, term: 7, type: "normal" as const, data: enc.encode("a") },
  { index: 101, term: 8, type: "confChange" as const, data: new Uint8Array(0) },
];

const hexOf = (b: Uint8Array): string => Buffer.from(b).toString("hex");

describe("raft log records", () => {
  test("every kind round-trips", () => {
    const records: LogRecord[] = [
      {
        kind: "header",
        syncedEnd: 0,
        lastIndex: 101,
        hardState: hs,
        seq: 2 ** 40,
        previousSeq: 6,
        previousEnd: 70000,
        compactIndex: 90,
        compactTerm: 6,
        lastTerm: 8,
        repairThrough: 120,
        snapshot,
        entries,
      },
      { kind: "save", syncedEnd: 5, lastIndex: 101, hardState: hs, snapshot, entries },
      {
        kind: "save",
        syncedEnd: 5,
        lastIndex: 101,
        hardState: hs,
        snapshot: undefined,
        entries: [],
      },
      { kind: "snapshot", syncedEnd: 77, lastIndex: 101, hardState: hs, snapshot },
      { kind: "compact", syncedEnd: 1, lastIndex: 101, hardState: hs, index: 95, term: 7 },
      { kind: "close", syncedEnd: 2 ** 50, lastIndex: 0, hardState: hs },
    ];
    for (const r of records) assert.deepEqual(decodeLogRecord(encodeLogRecord(r)), r);
  });

  test("the example of docs/format/raft-log.md is byte for byte what the storage writes", async () => {
    const fs = new MemoryFileSystem();
    const st = await RaftLogStorage.open(fs, "/raft");
    await st.save({
      hardState: { term: 2, vote: 1, commit: 0 },
      entries: [{ index: 1, term: 2, type: "normal", data: enc.encode("hi") }],
    });
    await st.close();
    const bytes = fs.readFile("/raft/segment-0000000000000001.log");
    // The rows of the example, as printed in the document.
    const documented = [
      "4d b0 65 07 14 00 01",
      "01 01",
      "00 00",
      "00 00 00",
      "01 00 00",
      "00 00 00 00",
      "00 00 00 00 00",
      "00",
      "66 b2 f1 25 0f 00 01",
      "01 02",
      "1b 01",
      "02 01 00",
      "00",
      "01 02 01 00 02 68 69",
      "77 7d b6 f5 07 00 01",
      "01 05",
      "31 01 02 01 00",
    ];
    assert.equal(bytes.length, 63);
    assert.equal(hexOf(bytes), documented.join("").replaceAll(" ", ""));
  });

  test("decoding refuses an unknown kind, unknown save flags, trailing bytes and truncation", () => {
    const good = encodeLogRecord({ kind: "close", syncedEnd: 1, lastIndex: 2, hardState: hs });
    const bad: [string, Uint8Array][] = [
      ["unknown kind", Uint8Array.from([1, 9, ...good.subarray(2)])],
      ["trailing bytes", Uint8Array.from([...good, 0])],
      ["truncated", good.subarray(0, good.length - 1)],
      ["version 0", Uint8Array.from([0, ...good.subarray(1)])],
      [
        "unknown save flags",
        (() => {
          const s = encodeLogRecord({
            kind: "save",
            syncedEnd: 0,
            lastIndex: 0,
            hardState: hs,
            snapshot: undefined,
            entries: [],
          });
          const copy = s.slice();
          copy[copy.length - 2] = 4;
          return copy;
        })(),
      ],
    ];
    for (const [what, payload] of bad) {
      assert.throws(
        () => decodeLogRecord(payload),
        (e) => isRaftError(e, "MALFORMED"),
        what,
      );
    }
  });
});
