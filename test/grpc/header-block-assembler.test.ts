/**
 * HeaderBlockAssembler (src/grpc/http2/header-block-assembler.ts): HEADERS and
 * CONTINUATION put together, padding and priority removed, the size limit, bad HPACK.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as h2 from "../../src/grpc/http2/frames.js";
import {
  type HeaderBlock,
  HeaderBlockAssembler,
} from "../../src/grpc/http2/header-block-assembler.js";
import { encodeHeaderBlock } from "../../src/grpc/http2/hpack-encoder.js";

const block = encodeHeaderBlock([
  [":method", "POST"],
  [":path", "/kv.v1.KvService/Get"],
  ["x-long", "v".repeat(300)],
]);

function fields(r: unknown): string[] {
  return (r as HeaderBlock).fields;
}

test("one HEADERS frame with padding and priority: the block decoded, END_STREAM kept", () => {
  const a = new HeaderBlockAssembler(64 * 1024, 16 * 1024, () => assert.fail("invalid"));
  const pad = 7;
  const payload = Buffer.concat([Buffer.from([pad]), Buffer.alloc(5), block, Buffer.alloc(pad)]);
  const flags = h2.FLAG_END_HEADERS | h2.FLAG_PADDED | h2.FLAG_PRIORITY | h2.FLAG_END_STREAM;
  const r = a.headers(flags, 1, payload, 0, payload.length) as HeaderBlock;
  assert.equal(r.streamId, 1);
  assert.equal(r.endStream, true);
  assert.equal(r.oversized, false);
  assert.deepEqual(fields(r).slice(0, 4), [":method", "POST", ":path", "/kv.v1.KvService/Get"]);
  assert.equal(a.inProgress, false);
});

test("HEADERS + CONTINUATIONs: incomplete until END_HEADERS; an empty CONTINUATION is reported invalid", () => {
  let invalid = 0;
  const a = new HeaderBlockAssembler(64 * 1024, 16 * 1024, () => invalid++);
  assert.equal(a.headers(0, 3, block, 0, 100), undefined);
  assert.equal(a.inProgress, true);
  assert.equal(a.continuation(0, 3, block, 100, 100), undefined);
  assert.equal(invalid, 1);
  const r = a.continuation(h2.FLAG_END_HEADERS, 3, block, 100, block.length) as HeaderBlock;
  assert.equal(r.streamId, 3);
  assert.equal(fields(r)[5], "v".repeat(300));
  assert.equal(a.inProgress, false);
});

test("connection errors: stream 0, CONTINUATION of another stream, a block over the size limit, bad HPACK", () => {
  const a = new HeaderBlockAssembler(200, 16 * 1024, () => {});
  assert.deepEqual(a.headers(h2.FLAG_END_HEADERS, 0, block, 0, block.length), {
    code: h2.ErrorCode.PROTOCOL_ERROR,
    why: "HEADERS on stream 0",
  });
  assert.equal(a.headers(0, 1, block, 0, 100), undefined);
  assert.equal(
    (a.continuation(0, 3, block, 100, 150) as { code: number }).code,
    h2.ErrorCode.PROTOCOL_ERROR,
  );
  assert.equal(
    (a.continuation(0, 1, block, 100, 250) as { code: number }).code,
    h2.ErrorCode.ENHANCE_YOUR_CALM,
  );
  const b = new HeaderBlockAssembler(64 * 1024, 16 * 1024, () => {});
  const bad = Buffer.from([0x7f, 0xff, 0xff, 0xff, 0xff, 0x0f]); // an index far past the tables
  assert.equal(
    (b.headers(h2.FLAG_END_HEADERS, 1, bad, 0, bad.length) as { code: number }).code,
    h2.ErrorCode.COMPRESSION_ERROR,
  );
});

test("a decoded list over maxHeaderListSize is oversized, not an error", () => {
  const a = new HeaderBlockAssembler(64 * 1024, 100, () => {});
  const r = a.headers(h2.FLAG_END_HEADERS, 1, block, 0, block.length) as HeaderBlock;
  assert.equal(r.oversized, true);
});
