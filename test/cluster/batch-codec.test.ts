/** The hand-written MessageBatch codec gives protobuf-es's bytes and reads any valid encoding. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { decodeBatch, encodeBatch } from "../../src/cluster/batch-codec.js";
import { KvError } from "../../src/errors.js";
import { MessageBatchSchema } from "../../src/proto/gen/raft/v1/peer_pb.js";
import { randInt, rng, testSeed } from "../support/random.js";

test("encodeBatch matches protobuf-es, decodeBatch reads protobuf-es (seeded)", () => {
  const seed = testSeed();
  const r = rng(seed);
  const int = (n: number) => randInt(r, n);
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  for (let round = 0; round < 300; round++) {
    const ids = [0, 1, 127, 128, 16383, 16384, 2 ** 52 - 1, int(2 ** 31)];
    const clusterId = ids[int(ids.length)]!;
    const from = ids[int(ids.length)]!;
    const to = ids[int(ids.length)]!;
    const messages = Array.from({ length: int(6) }, () => bytes(int(300)));
    const mine = encodeBatch({ clusterId, from, to, messages });
    const theirs = toBinary(
      MessageBatchSchema,
      create(MessageBatchSchema, {
        clusterId: BigInt(clusterId),
        from: BigInt(from),
        to: BigInt(to),
        messages,
      }),
    );
    assert.deepEqual(new Uint8Array(mine), theirs, `seed ${seed} round ${round}`);
    const back = decodeBatch(theirs);
    assert.deepEqual(
      { ...back, messages: back.messages.map((m) => Buffer.from(m)) },
      { clusterId, from, to, messages: messages.map((m) => Buffer.from(m)) },
    );
    const parsed = fromBinary(MessageBatchSchema, mine);
    assert.equal(parsed.messages.length, messages.length);
  }
  // Reserved prefix room.
  const withPrefix = encodeBatch({ clusterId: 1, from: 2, to: 3, messages: [] }, 5);
  assert.deepEqual([...withPrefix.subarray(5)], [0x08, 1, 0x10, 2, 0x18, 3]);
});

test("decodeBatch skips unknown fields and refuses malformed input", () => {
  // field 9 (varint), then field 4.
  const ok = Uint8Array.from([0x48, 0x05, 0x22, 0x01, 0xaa, 0x08, 0x07]);
  const b = decodeBatch(ok);
  assert.equal(b.clusterId, 7);
  assert.deepEqual([...b.messages[0]!], [0xaa]);
  for (const bad of [
    [0x22, 0x05, 0x01], // length past the end
    [0x08], // truncated varint
    [0x0b], // wire type 3
    [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // beyond 2^53
  ]) {
    assert.throws(
      () => decodeBatch(Uint8Array.from(bad)),
      (err: unknown) => err instanceof KvError && err.code === "INVALID_ARGUMENT",
    );
  }
});
