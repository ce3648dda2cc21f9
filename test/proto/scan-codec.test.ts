/**
 * The hand-written ScanResponse codec against protobuf-es: byte-identical encodings,
 * decoding of protobuf-es output and of encodings with unknown fields and reordered or
 * repeated fields, and refusal of malformed input.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { KeyValueSchema, ScanResponseSchema } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { decodeScanResponse, encodeScanResponse } from "../../src/proto/scan-codec.js";

const rows = fc.array(
  fc.record({
    key: fc.uint8Array({ maxLength: 300 }),
    value: fc.uint8Array({ maxLength: 20_000 }),
  }),
  { maxLength: 40 },
);

function message(entries: { key: Uint8Array; value: Uint8Array }[]) {
  return create(ScanResponseSchema, { entries: entries.map((e) => create(KeyValueSchema, e)) });
}

const plain = (m: { entries: { key: Uint8Array; value: Uint8Array }[] }) =>
  m.entries.map((e) => [Buffer.from(e.key).toString("hex"), Buffer.from(e.value).toString("hex")]);

test("encodes exactly what protobuf-es encodes, and decodes it back", () => {
  fc.assert(
    fc.property(rows, (entries) => {
      const msg = message(entries);
      const ours = encodeScanResponse(msg);
      const theirs = toBinary(ScanResponseSchema, msg);
      assert.deepEqual(new Uint8Array(ours), theirs);
      assert.deepEqual(plain(decodeScanResponse(theirs)), plain(msg));
      assert.deepEqual(plain(fromBinary(ScanResponseSchema, ours)), plain(msg));
    }),
    { numRuns: 300 },
  );
});

test("decodes fields in any order, repeated fields (last wins) and unknown fields", () => {
  // entries[0] = { value "v", key "k", unknown field 9 (varint 5), key "K" }: 11 bytes;
  // then an unknown top-level field 7 (fixed64); then entries[1] = {} (both fields empty).
  const fixed = Uint8Array.from([
    0x0a, 11, 0x12, 1, 0x76, 0x0a, 1, 0x6b, 0x48, 0x05, 0x0a, 1, 0x4b, 0x39, 1, 2, 3, 4, 5, 6, 7, 8,
    0x0a, 0,
  ]);
  const ours = plain(decodeScanResponse(fixed));
  const theirs = plain(fromBinary(ScanResponseSchema, fixed));
  assert.deepEqual(ours, theirs);
  assert.deepEqual(ours, [
    [Buffer.from("K").toString("hex"), Buffer.from("v").toString("hex")],
    ["", ""],
  ]);
});

test("keys and values are views of the received bytes (no copy)", () => {
  const msg = message([{ key: Buffer.from("key"), value: Buffer.from("value") }]);
  const bytes = encodeScanResponse(msg);
  const decoded = decodeScanResponse(bytes);
  assert.equal(decoded.entries[0]!.key.buffer, bytes.buffer);
});

test("malformed input throws", () => {
  for (const bad of [
    [0x0a, 5, 0x0a, 1], // entry longer than the message
    [0x0a, 2, 0x0a, 9], // key longer than the entry
    [0x0a], // truncated length
    [0x0b], // wire type 3 (groups) unsupported
    [0x00], // field number 0
    [0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // varint too long
  ]) {
    assert.throws(() => decodeScanResponse(Uint8Array.from(bad)), Error, JSON.stringify(bad));
  }
});
