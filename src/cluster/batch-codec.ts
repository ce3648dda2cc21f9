/**
 * raft.v1.MessageBatch (proto/raft/v1/peer.proto) by hand: the peer stream's hot path
 * (one per Ready per peer), where protobuf-es's reflective codec would cost more than the
 * Raft codec inside it. The bytes are those of protobuf's encoding (fields 1-3 varints,
 * field 4 one length-delimited record per message, in order); the decoder accepts any
 * valid encoding of the message (fields in any order, unknown fields skipped), as
 * test/cluster/batch-codec.test.ts checks against protobuf-es.
 */
import { KvError } from "../errors.js";

export interface WireBatch {
  readonly clusterId: number;
  readonly from: number;
  readonly to: number;
  /** Each one a Raft message in the Raft codec (encodeMessage). */
  readonly messages: readonly Uint8Array[];
}

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

function writeVarint(out: Uint8Array, at: number, v: number): number {
  while (v >= 0x80) {
    out[at++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  return at;
}

/** Bytes of the batch's encoding with `messages` of these sizes. */
export function batchSize(
  clusterId: number,
  from: number,
  to: number,
  sizes: readonly number[],
): number {
  let n = 0;
  if (clusterId !== 0) n += 1 + varintSize(clusterId);
  if (from !== 0) n += 1 + varintSize(from);
  if (to !== 0) n += 1 + varintSize(to);
  for (const s of sizes) n += 1 + varintSize(s) + s;
  return n;
}

/**
 * Encodes the batch into a buffer with `reserve` free bytes before it (for the gRPC
 * message prefix): returns the buffer, the batch at offset `reserve`.
 */
export function encodeBatch(b: WireBatch, reserve = 0): Buffer {
  const sizes = b.messages.map((m) => m.length);
  const size = batchSize(b.clusterId, b.from, b.to, sizes);
  const out = Buffer.allocUnsafe(reserve + size);
  let at = reserve;
  if (b.clusterId !== 0) {
    out[at++] = 0x08;
    at = writeVarint(out, at, b.clusterId);
  }
  if (b.from !== 0) {
    out[at++] = 0x10;
    at = writeVarint(out, at, b.from);
  }
  if (b.to !== 0) {
    out[at++] = 0x18;
    at = writeVarint(out, at, b.to);
  }
  for (const m of b.messages) {
    out[at++] = 0x22;
    at = writeVarint(out, at, m.length);
    out.set(m, at);
    at += m.length;
  }
  return out;
}

function malformed(what: string): KvError {
  return new KvError("INVALID_ARGUMENT", `malformed raft.v1.MessageBatch: ${what}`);
}

/** Decodes a MessageBatch; the messages are views into `bytes`. Throws INVALID_ARGUMENT. */
export function decodeBatch(bytes: Uint8Array): WireBatch {
  let at = 0;
  const end = bytes.length;
  const varint = (): number => {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (at >= end) throw malformed("truncated varint");
      const byte = bytes[at++]!;
      v += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(v)) throw malformed("an integer beyond 2^53");
        return v;
      }
      scale *= 128;
    }
    throw malformed("varint too long");
  };
  let clusterId = 0;
  let from = 0;
  let to = 0;
  const messages: Uint8Array[] = [];
  while (at < end) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 0) {
      const v = varint();
      if (field === 1) clusterId = v;
      else if (field === 2) from = v;
      else if (field === 3) to = v;
    } else if (wire === 2) {
      const n = varint();
      if (n > end - at) throw malformed("a length past the end");
      if (field === 4) messages.push(bytes.subarray(at, at + n));
      at += n;
    } else if (wire === 1) {
      at += 8;
    } else if (wire === 5) {
      at += 4;
    } else {
      throw malformed(`wire type ${wire}`);
    }
    if (at > end) throw malformed("a field past the end");
  }
  return { clusterId, from, to, messages };
}
