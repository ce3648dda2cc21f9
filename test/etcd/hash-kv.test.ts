/**
 * hashKv (src/etcd/hash-kv.ts) on two multi-version stores given the same or different
 * writes: equal iff the kept history is equal (keys, values, revisions, versions,
 * deletions), at any revision, after the same compaction.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hashKv } from "../../src/etcd/hash-kv.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";

const enc = (s: string) => Buffer.from(s);

type Op = ["put", string, string] | ["del", string];

async function storeWith(ops: readonly Op[]): Promise<{ mvcc: MvccStore; close(): Promise<void> }> {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const mvcc = await MvccStore.open(kv);
  for (const op of ops) {
    const w = mvcc.write();
    if (op[0] === "put") await w.put(enc(op[1]), enc(op[2]), 0n);
    else await w.deleteRange(enc(op[1]), new Uint8Array(0));
    await w.end();
  }
  return {
    mvcc,
    async close() {
      await mvcc.close();
      await kv.close();
    },
  };
}

const BASE: Op[] = [
  ["put", "a", "1"],
  ["put", "b", "2"],
  ["put", "a", "3"],
  ["del", "b"],
  ["put", "c", "4"],
];

test("the same writes hash the same at every revision; a value or a deletion changes it", async () => {
  const one = await storeWith(BASE);
  const two = await storeWith(BASE);
  const value = await storeWith(BASE.map((op, i) => (i === 2 ? ["put", "a", "X"] : op)));
  const noDelete = await storeWith(BASE.map((op, i) => (i === 3 ? ["put", "z", "2"] : op)));
  try {
    for (let rev = 1; rev <= one.mvcc.revision; rev++) {
      assert.equal((await hashKv(one.mvcc, rev)).hash, (await hashKv(two.mvcc, rev)).hash);
    }
    const now = one.mvcc.revision;
    assert.equal((await hashKv(one.mvcc, 0)).revision, now);
    assert.equal((await hashKv(value.mvcc, 3)).hash, (await hashKv(one.mvcc, 3)).hash);
    assert.notEqual((await hashKv(value.mvcc, 4)).hash, (await hashKv(one.mvcc, 4)).hash);
    assert.notEqual((await hashKv(noDelete.mvcc, now)).hash, (await hashKv(one.mvcc, now)).hash);
  } finally {
    for (const s of [one, two, value, noDelete]) await s.close();
  }
});

test("after the same compaction the hashes agree and report the compacted revision", async () => {
  const one = await storeWith(BASE);
  const two = await storeWith(BASE);
  try {
    const before = (await hashKv(one.mvcc, 0)).hash;
    await one.mvcc.compact(4).done;
    await two.mvcc.compact(4).done;
    const a = await hashKv(one.mvcc, 0);
    const b = await hashKv(two.mvcc, 0);
    assert.equal(a.hash, b.hash);
    assert.equal(a.compactRevision, 4);
    assert.notEqual(a.hash, before, "what compaction removed is not hashed");
    await assert.rejects(hashKv(one.mvcc, 3), (e) => (e as { code?: string }).code === "COMPACTED");
    await assert.rejects(
      hashKv(one.mvcc, 99),
      (e) => (e as { code?: string }).code === "FUTURE_REVISION",
    );
  } finally {
    await one.close();
    await two.close();
  }
});
