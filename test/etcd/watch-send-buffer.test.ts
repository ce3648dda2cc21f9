/**
 * A Watch stream's send buffer (WatchStreamOptions.sendBufferBytes): while the client's
 * flow-control window is used up, the stream keeps taking its watchers' events until that
 * many bytes wait unsent; only then is it `blocked` (its watchers fall behind and catch up
 * from the store), and it is unblocked, with the hub woken, once the bytes have left.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { WatchEvent } from "../../src/etcd/watch-events.js";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { WatchStream } from "../../src/etcd/watch-stream.js";
import { PLAIN_WATCHER_OPTIONS, Watcher } from "../../src/etcd/watcher.js";
import type { ServerCall } from "../../src/grpc/server-call.js";
import type { WatchResponse } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";

/** A call whose client grants no window: every byte written waits, until `drain()`. */
class StuckCall {
  ended = false;
  unsentBytes = 0;
  private waiters: (() => void)[] = [];

  write(): boolean {
    return this.writeEncoded(new Uint8Array(10));
  }

  writeEncoded(bytes: Uint8Array): boolean {
    this.unsentBytes += bytes.length + 5;
    return false;
  }

  whenWritable(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The client read everything. */
  drain(): void {
    this.unsentBytes = 0;
    for (const w of this.waiters.splice(0)) w();
  }
}

function change(revision: number, valueBytes: number): WatchEvent {
  const kv = {
    key: Buffer.from(`k${revision}`),
    createRevision: revision,
    modRevision: revision,
    version: 1,
    value: Buffer.alloc(valueBytes, 1),
    lease: 0n,
  };
  return new WatchEvent({ type: "put", kv, revision });
}

test("a stream is blocked only once its unsent bytes reach the send buffer, and unblocked once they left", async (t) => {
  const hub = new WatchHub(() => undefined);
  t.after(() => hub.close());
  let wakes = 0;
  const wake = hub.wake.bind(hub);
  hub.wake = () => {
    wakes++;
    wake();
  };
  const call = new StuckCall();
  const ids = { clusterId: 1n, memberId: 2n, raftTerm: 3n };
  const stream = new WatchStream(call as unknown as ServerCall<WatchResponse>, hub, () => ids, {
    progressIntervalMs: 60_000,
    fragmentBytes: 1 << 20,
    sendBufferBytes: 10_000,
  });
  t.after(() => stream.close());
  const w = new Watcher(1n, Buffer.from("k"), Uint8Array.of(0), 1, PLAIN_WATCHER_OPTIONS, stream);
  let revision = 1;
  // Responses of about 1,000 bytes: the tenth reaches the buffer's 10,000 bytes.
  while (call.unsentBytes < 10_000) {
    assert.equal(stream.blocked, false, `blocked with ${call.unsentBytes} bytes unsent`);
    stream.sendEvents(w, [change(revision, 950)], revision);
    revision++;
  }
  assert.ok(revision > 9, `${revision - 1} responses taken`);
  assert.equal(stream.blocked, true, `${call.unsentBytes} bytes unsent: blocked`);
  const before = wakes;
  call.drain();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(stream.blocked, false, "unblocked once the bytes left");
  assert.ok(wakes > before, "the hub was woken");
});
