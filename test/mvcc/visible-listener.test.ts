/**
 * MvccStore.onVisible: the hook etcd's Watch (src/etcd/watch-hub.ts) waits on. Each write
 * that changed keys is told once, in revision order, when its changes are readable and
 * before its `end` resolves; a write that changed nothing is not told; a throwing
 * listener fails nothing; unsubscribing stops the calls.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";

const b = (s: string) => Buffer.from(s);

test("onVisible: each changing write once, in order, readable and before end resolves", async () => {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const m = await MvccStore.open(kv);
  const told: number[] = [];
  const readable: boolean[] = [];
  const resolved = new Set<number>();
  const off = m.onVisible((rev) => {
    told.push(rev);
    readable.push(!resolved.has(rev));
    const v = m.read();
    readable.push(v.revision >= rev);
    v.release();
  });
  m.onVisible(() => {
    throw new Error("ignored");
  });
  const ends: Promise<void>[] = [];
  for (let i = 0; i < 5; i++) {
    const w = m.write();
    if (i !== 2) await w.put(b(`k${i}`), b("v"), 0n);
    const rev = w.revision;
    ends.push(w.end().then(() => void resolved.add(rev)));
  }
  await Promise.all(ends);
  assert.deepEqual(told, [2, 3, 4, 5]);
  assert.ok(readable.every((x) => x));
  off();
  const w = m.write();
  await w.put(b("z"), b("v"), 0n);
  await w.end();
  assert.deepEqual(told, [2, 3, 4, 5]);
  await m.close();
  await kv.close();
});
