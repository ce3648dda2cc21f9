/**
 * OutputQueue: the frames of one turn leave in one socket write, byte for byte, and a
 * buffer handed to a socket that has not sent it yet is never written again (the arena is
 * reused only once the socket's buffer is empty), whatever the frames' sizes.
 */
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { test } from "node:test";
import { FRAME_HEADER_BYTES } from "../../src/grpc/http2/frames.js";
import { OutputQueue } from "../../src/grpc/http2/output-queue.js";
import { randInt, rng, testSeed } from "../support/random.js";

/** A socket that keeps every buffer it was given, and says it sent them iff `drains`. */
class FakeSocket {
  writes: Buffer[] = [];
  /** Copies of the writes as they were when written. */
  copies: Buffer[] = [];
  drains = true;
  writableLength = 0;
  write(b: Buffer): boolean {
    this.writes.push(b);
    this.copies.push(Buffer.from(b));
    if (!this.drains) this.writableLength += b.length;
    return this.drains;
  }
}

function expectedFrame(type: number, flags: number, id: number, payload: Uint8Array): Buffer {
  const h = Buffer.alloc(FRAME_HEADER_BYTES);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(id, 5);
  return Buffer.concat([h, payload]);
}

test("frames queued together leave in one write, in order, byte for byte", () => {
  const socket = new FakeSocket();
  const flushed: boolean[] = [];
  const q = new OutputQueue(socket as unknown as Socket, (blocked) => flushed.push(blocked));
  const a = Buffer.from("hello");
  const b = Buffer.alloc(40_000, 7); // larger than the first arena
  q.frame(0, 0, 1, a);
  q.frame2(0, 1, 3, Buffer.from([0, 0, 0, 0, 3]), b);
  q.frame(4, 1, 0);
  q.flush();
  assert.equal(socket.writes.length, 1);
  assert.deepEqual(
    socket.writes[0],
    Buffer.concat([
      expectedFrame(0, 0, 1, a),
      expectedFrame(0, 1, 3, Buffer.concat([Buffer.from([0, 0, 0, 0, 3]), b])),
      expectedFrame(4, 1, 0, Buffer.alloc(0)),
    ]),
  );
  assert.deepEqual(flushed, [false]);
  q.flush();
  assert.equal(socket.writes.length, 1, "an empty flush writes nothing");
});

test("a buffer the socket still holds is never overwritten; once drained the arena is reused", () => {
  const seed = testSeed();
  const r = rng(seed);
  const socket = new FakeSocket();
  const q = new OutputQueue(socket as unknown as Socket, () => {});
  for (let turn = 0; turn < 300; turn++) {
    socket.drains = r() < 0.5;
    if (socket.drains) socket.writableLength = 0;
    const frames = 1 + randInt(r, 6);
    for (let f = 0; f < frames; f++) {
      const size = r() < 0.1 ? randInt(r, 300_000) : randInt(r, 2_000);
      q.frame(0, 0, 2 * turn + 1, Buffer.alloc(size, turn & 0xff));
    }
    q.flush();
    // Every write the socket may still be sending is as it was handed over.
    for (let i = 0; i < socket.writes.length; i++) {
      assert.ok(socket.writes[i]!.equals(socket.copies[i]!), `seed ${seed}: write ${i} changed`);
    }
    if (socket.drains) {
      socket.writes = [];
      socket.copies = [];
    }
  }
  // Reuse: with a socket that always drains, turns write from the same memory (together
  // more than any arena holds).
  socket.drains = true;
  socket.writableLength = 0;
  const buffers = new Set<ArrayBufferLike>();
  for (let turn = 0; turn < 40; turn++) {
    q.frame(0, 0, 1, Buffer.alloc(20_000, turn));
    q.flush();
    buffers.add(socket.writes.at(-1)!.buffer);
  }
  assert.equal(buffers.size, 1, "the arena is reused once the socket has sent everything");
});
