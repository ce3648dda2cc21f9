import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  decodeConfChange,
  decodeEntry,
  decodeHardState,
  decodeMessage,
  decodeSnapshotMetadata,
  encodeConfChange,
  encodeEntry,
  encodeHardState,
  encodeMessage,
  encodeSnapshotMetadata,
} from "../../src/raft/codec.js";
import { isRaftError } from "../../src/raft/errors.js";
import type { Message } from "../../src/raft/types.js";
import { randInt, rng } from "../support/random.js";

const enc = new TextEncoder();

function message(overrides: Partial<Message>): Message {
  return {
    type: "app",
    to: 2,
    from: 1,
    term: 7,
    logTerm: 6,
    index: 41,
    entries: [],
    commit: 40,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: new Uint8Array(0),
    ...overrides,
  };
}

const isMalformed = (err: unknown): boolean => isRaftError(err, "MALFORMED");

describe("raft codec", () => {
  test("an entry round-trips, including indexes past 2^32 and empty data", () => {
    for (const e of [
      { term: 1, index: 1, type: "normal" as const, data: new Uint8Array(0) },
      { term: 2 ** 40, index: 2 ** 53 - 1, type: "confChange" as const, data: enc.encode("x") },
    ]) {
      assert.deepEqual(decodeEntry(encodeEntry(e)), e);
    }
  });

  test("an entry's bytes are as documented in docs/format/raft-codec.md", () => {
    const bytes = encodeEntry({ term: 3, index: 300, type: "normal", data: enc.encode("hi") });
    assert.deepEqual([...bytes], [0x03, 0xac, 0x02, 0x00, 0x02, 0x68, 0x69]);
  });

  test("hard state, snapshot metadata and conf changes round-trip", () => {
    const hs = { term: 9, vote: 3, commit: 12345678901 };
    assert.deepEqual(decodeHardState(encodeHardState(hs)), hs);
    const m = { index: 99, term: 4, confState: { voters: [1, 2, 3], learners: [7] } };
    assert.deepEqual(decodeSnapshotMetadata(encodeSnapshotMetadata(m)), m);
    const cc = { type: "addLearner" as const, nodeId: 2 ** 52, context: enc.encode("ctx") };
    assert.deepEqual(decodeConfChange(encodeConfChange(cc)), cc);
  });

  test("messages of every shape round-trip", () => {
    const msgs: Message[] = [
      message({}),
      message({ type: "appResp", reject: true, rejectHint: 17 }),
      message({
        entries: [
          { term: 6, index: 42, type: "normal", data: enc.encode("a") },
          { term: 7, index: 43, type: "confChange", data: enc.encode("bb") },
        ],
      }),
      message({
        type: "snap",
        snapshot: {
          metadata: { index: 50, term: 5, confState: { voters: [1, 2], learners: [] } },
          data: enc.encode("state"),
        },
      }),
      message({ type: "readIndex", context: enc.encode("read-1") }),
    ];
    for (const m of msgs) assert.deepEqual(decodeMessage(encodeMessage(m)), m);
  });

  test("every truncation and every single-byte change of a message is refused or decodes to a valid message", () => {
    const seed = 11;
    const random = rng(seed);
    const bytes = encodeMessage(
      message({
        entries: [{ term: 6, index: 42, type: "normal", data: enc.encode("payload") }],
        context: enc.encode("c"),
      }),
    );
    for (let n = 0; n < bytes.length; n++) {
      assert.throws(() => decodeMessage(bytes.subarray(0, n)), isMalformed, `cut at ${n}`);
    }
    for (let i = 0; i < 500; i++) {
      const copy = bytes.slice();
      copy[randInt(random, copy.length)] = randInt(random, 256);
      try {
        const m = decodeMessage(copy);
        assert.ok(m.entries.every((e) => e.data.length <= copy.length));
      } catch (err) {
        assert.ok(isMalformed(err), `seed ${seed}: ${String(err)}`);
      }
    }
  });

  test("trailing bytes, unknown versions, types and flags are MALFORMED", () => {
    const good = encodeMessage(message({}));
    const withTrailer = new Uint8Array(good.length + 1);
    withTrailer.set(good);
    assert.throws(() => decodeMessage(withTrailer), isMalformed);
    const badVersion = good.slice();
    badVersion[0] = 2;
    assert.throws(() => decodeMessage(badVersion), isMalformed);
    const badType = good.slice();
    badType[1] = 200;
    assert.throws(() => decodeMessage(badType), isMalformed);
    assert.throws(() => decodeEntry(new Uint8Array([1, 1, 9, 0])), isMalformed);
    assert.throws(() => decodeConfChange(new Uint8Array([1, 3, 1, 0])), isMalformed);
  });

  test("a length that claims more bytes than are left is refused before allocating", () => {
    // term 1, index 1, normal, data length 2^40.
    const bytes = new Uint8Array([1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
    assert.throws(() => decodeEntry(bytes), isMalformed);
  });

  test("refuses to encode a negative or fractional number", () => {
    assert.throws(
      () => encodeHardState({ term: -1, vote: 0, commit: 0 }),
      (err: unknown) => isRaftError(err, "INVALID_ARGUMENT"),
    );
    assert.throws(
      () => encodeHardState({ term: 1.5, vote: 0, commit: 0 }),
      (err: unknown) => isRaftError(err, "INVALID_ARGUMENT"),
    );
  });
});
