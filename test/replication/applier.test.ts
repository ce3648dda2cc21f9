/**
 * The apply path alone, over a real KvStore: one batch per run of plain entries (a CAS
 * apart) with the applied index of its last entry,
 * entries visible strictly in log order (a decided CAS batch's promise settles a step
 * later than a plain one's), replay skipping what was applied, results to the proposer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WriteBatch } from "../../src/batch/write-batch.js";
import { KvStore } from "../../src/db/kv-store.js";
import type { Entry } from "../../src/raft/types.js";
import { Applier, decodeApplied } from "../../src/replication/applier.js";
import { encodeCas, encodeWrite } from "../../src/replication/command.js";
import { APPLIED_KEY, storedKey } from "../../src/replication/keys.js";
import { upgradeMemberStore } from "../../src/replication/kv-state-machine.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { randInt, rng, testSeed } from "../support/random.js";

const SELF = 7;
const membership = {
  members: [{ id: SELF, name: "a", peerAddress: "h:1", clientAddress: "", learner: false }],
  removed: [],
};

function entry(index: number, data: Uint8Array, term = 2): Entry {
  return { index, term, type: "normal", data };
}

async function setup() {
  const store = await KvStore.open("/s", { fs: new MemoryFileSystem(), sync: false });
  const visible: number[] = [];
  const settled: Array<[number, unknown]> = [];
  const applier = new Applier(
    {
      store: () => store,
      mvcc: () => undefined,
      leases: () => undefined,
      upgrade: () => upgradeMemberStore(store),
      selfId: SELF,
      applyConfChange: () => {},
      onApplied: (i) => visible.push(i),
      onMembership: () => {},
      settle: (request, result) => settled.push([request, result]),
      settleAfterAdvance: (request, result) => settled.push([request, result]),
    },
    { index: 1, term: 1, membership },
  );
  return { store, applier, visible, settled };
}

describe("applier", () => {
  test("entries become visible in log order, CAS included, each with the applied index", async () => {
    const { store, applier, visible, settled } = await setup();
    const put = new WriteBatch().put("k", "1").encode();
    await applier.apply([
      entry(2, encodeWrite(SELF, 10, put)),
      entry(3, encodeCas(SELF, 11, Buffer.from("k"), Buffer.from("1"), Buffer.from("2"))),
      entry(4, new Uint8Array(0)),
      entry(5, encodeCas(9, 12, Buffer.from("k"), Buffer.from("1"), Buffer.from("3"))),
      entry(6, new Uint8Array(0)),
    ]);
    assert.deepEqual(visible, [2, 3, 4, 5, 6]);
    assert.equal(applier.appliedIndex, 6);
    assert.deepEqual(decodeApplied((await store.get(APPLIED_KEY))!), { index: 6, term: 2 });
    assert.equal(Buffer.from((await store.get(storedKey(Buffer.from("k"))))!).toString(), "2");
    // Only this member's proposals are answered; the CAS answers with its decision.
    assert.deepEqual(
      settled.map(([r, x]) => [
        r,
        x === undefined ? undefined : (x as { applied: boolean }).applied,
      ]),
      [
        [10, undefined],
        [11, true],
      ],
    );
    // Replayed entries (at or below the applied index) are skipped.
    await applier.apply([
      entry(5, encodeCas(SELF, 13, Buffer.from("k"), Buffer.from("2"), Buffer.from("9"))),
    ]);
    assert.equal(Buffer.from((await store.get(storedKey(Buffer.from("k"))))!).toString(), "2");
    await store.close();
  });

  test("consecutive plain entries share one store batch; a CAS splits the run", async () => {
    const { store, applier, visible, settled } = await setup();
    const batches: number[] = [];
    const write = store.write.bind(store);
    store.write = (b, o) => {
      batches.push(b.count);
      return write(b, o);
    };
    const w = (...ops: Array<[string, string | undefined]>) => {
      const b = new WriteBatch();
      for (const [k, v] of ops) {
        if (v === undefined) b.delete(k);
        else b.put(k, v);
      }
      return b.encode();
    };
    await applier.apply([
      entry(2, encodeWrite(SELF, 20, w(["a", "1"]))),
      entry(3, encodeWrite(9, 21, w(["b", "1"], ["c", "1"]))),
      entry(4, new Uint8Array(0)),
      entry(5, encodeCas(SELF, 22, Buffer.from("b"), Buffer.from("1"), Buffer.from("2"))),
      entry(6, encodeWrite(SELF, 23, w(["d", "1"]))),
      entry(7, encodeWrite(SELF, 24, w(["a", undefined]))),
    ]);
    // Entries 2-4: 3 puts + the applied key; the CAS goes through writeDecided; 6-7: 2 + 1.
    assert.deepEqual(batches, [4, 3]);
    assert.deepEqual(visible, [2, 3, 4, 5, 6, 7]);
    assert.deepEqual(
      settled.map(([r]) => r),
      [20, 22, 23, 24],
    );
    assert.deepEqual(decodeApplied((await store.get(APPLIED_KEY))!), { index: 7, term: 2 });
    const value = async (k: string) => {
      const v = await store.get(storedKey(Buffer.from(k)));
      return v === undefined ? undefined : Buffer.from(v).toString();
    };
    assert.deepEqual(
      [await value("a"), await value("b"), await value("c"), await value("d")],
      [undefined, "2", "1", "1"],
    );
    await store.close();
  });

  test("after a crash at any file operation of the apply, the store is exactly the state at its applied index", async () => {
    const seed = testSeed();
    const random = rng(seed);
    // Entries: puts, deletes and CASes on a few keys, with a model of the state after each.
    const entries: Entry[] = [];
    const states: Array<Map<string, string>> = [new Map()];
    let model = new Map<string, string>();
    for (let i = 2; i < 42; i++) {
      const key = `k${randInt(random, 4)}`;
      model = new Map(model);
      const r = random();
      if (r < 0.5) {
        const v = `v${i}`;
        entries.push(entry(i, encodeWrite(SELF, i, new WriteBatch().put(key, v).encode())));
        model.set(key, v);
      } else if (r < 0.65) {
        entries.push(entry(i, encodeWrite(SELF, i, new WriteBatch().delete(key).encode())));
        model.delete(key);
      } else {
        const cur = model.get(key);
        const expected = random() < 0.7 ? cur : "nope";
        const next = `c${i}`;
        entries.push(
          entry(
            i,
            encodeCas(
              SELF,
              i,
              Buffer.from(key),
              expected === undefined ? undefined : Buffer.from(expected),
              Buffer.from(next),
            ),
          ),
        );
        if (expected === cur) model.set(key, next);
      }
      states.push(model);
    }
    const run = async (crashAt: number) => {
      const mem = new MemoryFileSystem();
      let clone: MemoryFileSystem | undefined;
      const fs = new FaultInjectingFileSystem(mem, {
        onOp: (_op, index) => {
          if (index === crashAt && clone === undefined) {
            clone = mem.crashClone({ unsyncedRetention: 0.5, seed: seed + crashAt });
          }
        },
      });
      const store = await KvStore.open("/s", { fs, sync: false, writeBufferSize: 4096 });
      const applier = new Applier(
        {
          store: () => store,
          mvcc: () => undefined,
          leases: () => undefined,
          upgrade: () => upgradeMemberStore(store),
          selfId: SELF,
          applyConfChange: () => {},
          onApplied: () => {},
          onMembership: () => {},
          settle: () => {},
          settleAfterAdvance: () => {},
        },
        { index: 1, term: 1, membership },
      );
      for (let at = 0; at < entries.length; at += 5) await applier.apply(entries.slice(at, at + 5));
      await store.close();
      return { ops: fs.opCount, clone };
    };
    const { ops } = await run(-1);
    for (let crashAt = 0; crashAt < ops; crashAt++) {
      const { clone } = await run(crashAt);
      if (clone === undefined) continue;
      const store = await KvStore.open("/s", { fs: clone, walRecoveryMode: "pointInTime" });
      const raw = await store.get(APPLIED_KEY);
      const index = raw === undefined ? 1 : decodeApplied(raw).index;
      const expected = states[index - 1]!;
      const actual = new Map<string, string>();
      for (const [k, v] of await store.scan(Buffer.from([1]), Buffer.from([2]))) {
        actual.set(k.subarray(1).toString(), v.toString());
      }
      assert.deepEqual(
        actual,
        expected,
        `seed ${seed}, crash at operation ${crashAt}: applied ${index}`,
      );
      await store.close();
    }
  });
});
