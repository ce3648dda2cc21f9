/**
 * The hub delivers in a turn of the event loop of its own: a write's commit (in a cluster,
 * the Raft apply) tells the hub its revision and goes on at once; the events reach the
 * watchers only after the turn that made them visible (its answers and messages flushed).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { WatchEvent } from "../../src/etcd/watch-events.js";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { PLAIN_WATCHER_OPTIONS, Watcher, type WatchSink } from "../../src/etcd/watcher.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { waitFor } from "../support/wait-for.js";

class Counter implements WatchSink {
  blocked = false;
  events = 0;
  sendEvents(_w: Watcher, changes: readonly WatchEvent[]): void {
    this.events += changes.length;
  }
  sendCompacted(): void {}
}

test("hub: a write's events are delivered after the turn that committed it, never inside it", async (t) => {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const m = await MvccStore.open(kv);
  const hub = new WatchHub(() => m);
  t.after(async () => {
    hub.close();
    await m.close();
    await kv.close();
  });
  const sink = new Counter();
  hub.add(new Watcher(1n, Uint8Array.of(0), Uint8Array.of(0), 0, PLAIN_WATCHER_OPTIONS, sink));
  await new Promise<void>((resolve) => setImmediate(resolve));
  let delivered = -1;
  await new Promise<void>((resolve, reject) => {
    // Everything from here to `resolve` runs in one turn: the commit, then every
    // microtask it leads to (a hub that delivered inside the turn would be done by then).
    setImmediate(() => {
      const w = m.write();
      w.put(Buffer.from("k"), Buffer.from("v"), 0n)
        .then(() => w.end())
        .then(async () => {
          for (let i = 0; i < 1000; i++) await Promise.resolve();
          delivered = sink.events;
          resolve();
        }, reject);
    });
  });
  assert.equal(delivered, 0, "events delivered inside the committing turn");
  await waitFor(() => sink.events === 1, "the event, in a later turn");
});
