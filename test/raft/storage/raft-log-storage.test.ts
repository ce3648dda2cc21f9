/**
 * RaftLogStorage: round trips through the RaftStorage reads and through reopening, suffix
 * overwrites, snapshot installs, the application's snapshots and compaction with segment
 * removal, bad input, the serialized order of concurrent writes, the one-fdatasync rule,
 * failure handling, and the directory lock. A seeded model run reopens after every
 * operation (KV_SEED replays it).
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { describe, test } from "node:test";
import { isKvError } from "../../../src/errors.js";
import { isRaftError } from "../../../src/raft/errors.js";
import { RaftLogStorage, type RaftLogStorageOptions } from "../../../src/raft/storage/index.js";
import type { Entry } from "../../../src/raft/types.js";
import { FaultInjectingFileSystem } from "../../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem } from "../../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { RealFileSystem } from "../../../src/vfs/real-file-system.js";
import { rng, testSeed } from "../../support/random.js";
import { tempDir } from "../../support/temp-dir.js";
import { applyToStorage, entryText, LogModel, nextOp, viewOf } from "./log-model.js";

const DIR = "/raft";
const enc = new TextEncoder();

function entry(index: number, term: number, text = `entry ${index}.${term}`): Entry {
  return { index, term, type: "normal", data: enc.encode(text) };
}

function range(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
}

function open(fs: FileSystem, options: RaftLogStorageOptions = {}): Promise<RaftLogStorage> {
  return RaftLogStorage.open(fs, DIR, options);
}

async function reopen(
  st: RaftLogStorage,
  fs: FileSystem,
  options: RaftLogStorageOptions = {},
): Promise<RaftLogStorage> {
  await st.close();
  return open(fs, options);
}

const terms = (st: RaftLogStorage): string =>
  st
    .entries(st.firstIndex(), st.lastIndex() + 1, Number.MAX_SAFE_INTEGER)
    .map((e) => `${e.index}/${e.term}`)
    .join(" ");

async function rejects(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isRaftError(err) || isKvError(err), `not a typed error: ${String(err)}`);
    assert.equal((err as { code: string }).code, code, (err as Error).message);
    return true;
  });
}

describe("RaftLogStorage", () => {
  test("a new log is empty: first index 1, last 0, term(0) 0, empty snapshot and hard state", async () => {
    const st = await open(new MemoryFileSystem());
    assert.equal(st.firstIndex(), 1);
    assert.equal(st.lastIndex(), 0);
    assert.equal(st.term(0), 0);
    assert.deepEqual(st.entries(1, 1, 100), []);
    assert.deepEqual(st.initialState(), {
      hardState: { term: 0, vote: 0, commit: 0 },
      confState: { voters: [], learners: [] },
    });
    assert.equal(st.snapshot().metadata.index, 0);
    assert.equal(st.recovery.segmentsRead, 0);
    await st.close();
  });

  test("entries and hard state round-trip through reads and through reopening", async () => {
    const fs = new MemoryFileSystem();
    let st = await open(fs);
    const big = { index: 3, term: 2, type: "confChange" as const, data: new Uint8Array(70_000) };
    big.data.fill(7);
    await st.save({ hardState: { term: 2, vote: 3, commit: 0 }, entries: range(1, 2, 2) });
    await st.save({ entries: [big, entry(4, 2)], hardState: { term: 2, vote: 3, commit: 3 } });
    const check = (s: RaftLogStorage) => {
      assert.equal(s.firstIndex(), 1);
      assert.equal(s.lastIndex(), 4);
      assert.equal(s.term(3), 2);
      assert.deepEqual(s.initialState().hardState, { term: 2, vote: 3, commit: 3 });
      const got = s.entries(1, 5, Number.MAX_SAFE_INTEGER);
      assert.deepEqual(got.map(entryText), [...range(1, 2, 2), big, entry(4, 2)].map(entryText));
    };
    check(st);
    st = await reopen(st, fs);
    check(st);
    assert.equal(st.recovery.damage, undefined);
    await st.close();
  });

  test("entries() stops before maxBytes of data but returns at least one entry; errors are typed", async () => {
    const st = await open(new MemoryFileSystem());
    await st.save({ entries: range(1, 5, 1), hardState: { term: 1, vote: 0, commit: 0 } });
    const size = entry(1, 1).data.length;
    assert.equal(st.entries(1, 6, 0).length, 1);
    assert.equal(st.entries(1, 6, size).length, 1);
    assert.equal(st.entries(1, 6, 2 * size).length, 2);
    assert.equal(st.entries(1, 6, 2 * size + 1).length, 2);
    assert.equal(st.entries(2, 6, Number.MAX_SAFE_INTEGER).length, 4);
    assert.throws(
      () => st.entries(1, 7, 100),
      (e) => isRaftError(e, "UNAVAILABLE"),
    );
    assert.throws(
      () => st.term(6),
      (e) => isRaftError(e, "UNAVAILABLE"),
    );
    assert.throws(
      () => st.entries(3, 2, 100),
      (e) => isRaftError(e, "INVALID_ARGUMENT"),
    );
    await st.createSnapshot(3, { voters: [1], learners: [] }, new Uint8Array());
    await st.compact(3);
    assert.throws(
      () => st.entries(3, 5, 100),
      (e) => isRaftError(e, "COMPACTED"),
    );
    assert.throws(
      () => st.term(2),
      (e) => isRaftError(e, "COMPACTED"),
    );
    assert.equal(st.term(3), 1);
    await st.close();
  });

  test("an entry at or below the last index replaces the stored suffix, also across segments and reopens", async () => {
    const fs = new MemoryFileSystem();
    const options = { segmentBytes: 100 };
    let st = await open(fs, options);
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    for (let i = 1; i <= 12; i++) await st.save({ entries: [entry(i, 1)] });
    assert.ok(st.segmentNames().length >= 3, "the entries span segments");
    await st.save({ entries: range(4, 6, 2), hardState: { term: 2, vote: 0, commit: 3 } });
    assert.equal(terms(st), "1/1 2/1 3/1 4/2 5/2 6/2");
    st = await reopen(st, fs, options);
    assert.equal(terms(st), "1/1 2/1 3/1 4/2 5/2 6/2");
    await st.save({ entries: range(6, 8, 3), hardState: { term: 3, vote: 2, commit: 3 } });
    st = await reopen(st, fs, options);
    assert.equal(terms(st), "1/1 2/1 3/1 4/2 5/2 6/3 7/3 8/3");
    assert.equal(st.entries(6, 7, 100)[0]!.data.toString(), entry(6, 3).data.toString());
    await st.close();
  });

  test("a leader's snapshot replaces the whole log; entries in the same save follow it", async () => {
    const fs = new MemoryFileSystem();
    let st = await open(fs);
    await st.save({ entries: range(1, 10, 1), hardState: { term: 1, vote: 0, commit: 5 } });
    const snapshot = {
      metadata: { index: 20, term: 3, confState: { voters: [1, 2, 3], learners: [4] } },
      data: enc.encode("descriptor"),
    };
    await st.save({
      snapshot,
      entries: range(21, 22, 3),
      hardState: { term: 3, vote: 0, commit: 20 },
    });
    const check = (s: RaftLogStorage) => {
      assert.equal(s.firstIndex(), 21);
      assert.equal(s.lastIndex(), 22);
      assert.equal(s.term(20), 3);
      assert.deepEqual(s.snapshot(), snapshot);
      assert.deepEqual(s.initialState().confState, snapshot.metadata.confState);
    };
    check(st);
    st = await reopen(st, fs);
    check(st);
    await rejects(
      st.save({ snapshot: { ...snapshot, metadata: { ...snapshot.metadata, index: 20 } } }),
      "SNAPSHOT_OUT_OF_DATE",
    );
    await st.close();
  });

  test("a bootstrap snapshot at index 0 gives an empty log its configuration", async () => {
    const fs = new MemoryFileSystem();
    let st = await open(fs);
    const confState = { voters: [1, 2, 3], learners: [] };
    await st.save({
      snapshot: { metadata: { index: 0, term: 0, confState }, data: new Uint8Array() },
    });
    st = await reopen(st, fs);
    assert.deepEqual(st.initialState().confState, confState);
    await st.save({ entries: [entry(1, 1)], hardState: { term: 1, vote: 1, commit: 0 } });
    await rejects(
      st.save({ snapshot: { metadata: { index: 0, term: 0, confState }, data: new Uint8Array() } }),
      "SNAPSHOT_OUT_OF_DATE",
    );
    await st.close();
  });

  test("createSnapshot records the application's snapshot; compact drops entries and removes whole segments", async () => {
    const fs = new MemoryFileSystem();
    const options = { segmentBytes: 150 };
    let st = await open(fs, options);
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    for (let i = 1; i <= 40; i++) {
      await st.save({ entries: [entry(i, 1)], hardState: { term: 1, vote: 1, commit: i } });
    }
    const before = st.segmentNames();
    assert.ok(before.length >= 6, `expected several segments, got ${before.length}`);
    const snap = await st.createSnapshot(30, { voters: [1, 2], learners: [] }, enc.encode("s30"));
    assert.deepEqual(snap.metadata, {
      index: 30,
      term: 1,
      confState: { voters: [1, 2], learners: [] },
    });
    assert.equal(st.firstIndex(), 1, "createSnapshot alone keeps the entries");
    await rejects(st.compact(31), "INVALID_ARGUMENT");
    await st.compact(25);
    assert.equal(st.firstIndex(), 26);
    assert.equal(st.term(25), 1);
    const after = st.segmentNames();
    assert.ok(after.length < before.length, "segments below the compaction point are removed");
    const onDisk = (await fs.list(DIR)).filter((n) => n.startsWith("segment-"));
    assert.deepEqual(onDisk, after);
    await rejects(st.compact(25), "COMPACTED");
    await rejects(
      st.createSnapshot(30, { voters: [], learners: [] }, new Uint8Array()),
      "SNAPSHOT_OUT_OF_DATE",
    );
    await rejects(
      st.createSnapshot(41, { voters: [], learners: [] }, new Uint8Array()),
      "UNAVAILABLE",
    );
    st = await reopen(st, fs, options);
    assert.equal(st.firstIndex(), 26);
    assert.equal(st.lastIndex(), 40);
    assert.deepEqual(st.snapshot(), snap);
    assert.equal(st.recovery.damage, undefined);
    // A snapshot install makes every older segment removable at once.
    await st.save({
      snapshot: {
        metadata: { index: 100, term: 2, confState: { voters: [1], learners: [] } },
        data: new Uint8Array(),
      },
      hardState: { term: 2, vote: 0, commit: 100 },
    });
    assert.deepEqual(st.segmentNames(), [st.segmentNames().at(-1)]);
    st = await reopen(st, fs, options);
    assert.equal(st.firstIndex(), 101);
    assert.equal(st.term(100), 2);
    await st.close();
  });

  test("bad input is refused with INVALID_ARGUMENT (SNAPSHOT_OUT_OF_DATE) and changes nothing, in memory or on disk", async () => {
    const fs = new MemoryFileSystem();
    const st = await open(fs);
    await st.save({ entries: range(1, 5, 2), hardState: { term: 2, vote: 1, commit: 2 } });
    await st.createSnapshot(2, { voters: [1], learners: [] }, new Uint8Array());
    const files = fs.snapshotFiles();
    const view = viewOf(st);
    const bad: [string, Parameters<RaftLogStorage["save"]>[0]][] = [
      ["entries not consecutive", { entries: [entry(6, 2), entry(8, 2)] }],
      ["a gap after the last index", { entries: [entry(7, 2)] }],
      ["terms going down within the entries", { entries: [entry(6, 3), entry(7, 2)] }],
      ["a term lower than the entry before", { entries: [entry(6, 1)] }],
      ["entries replacing the snapshot's", { entries: [entry(2, 3)] }],
      ["a lower term", { hardState: { term: 1, vote: 0, commit: 2 } }],
      ["a second vote in a term", { hardState: { term: 2, vote: 3, commit: 2 } }],
      ["a commit past the last index", { hardState: { term: 2, vote: 1, commit: 6 } }],
      [
        "a truncation below the commit",
        { entries: [entry(3, 3)], hardState: { term: 3, vote: 0, commit: 4 } },
      ],
      ["a negative index", { entries: [entry(-1, 2)] }],
      ["an unknown entry type", { entries: [{ ...entry(6, 2), type: "bogus" as "normal" }] }],
    ];
    bad.push([
      "an out-of-date snapshot",
      {
        snapshot: {
          metadata: { index: 2, term: 2, confState: { voters: [], learners: [] } },
          data: new Uint8Array(),
        },
      },
    ]);
    for (const [what, update] of bad) {
      const code = what === "an out-of-date snapshot" ? "SNAPSHOT_OUT_OF_DATE" : "INVALID_ARGUMENT";
      await assert.rejects(st.save(update), (err) => isRaftError(err, code), what);
      assert.deepEqual(viewOf(st), view, `${what}: memory unchanged`);
      assert.deepEqual(fs.snapshotFiles(), files, `${what}: files unchanged`);
    }
    await st.save({ entries: [entry(6, 2)] });
    assert.equal(st.lastIndex(), 6, "the log still takes good writes");
    await st.close();
  });

  test("a save with nothing new writes nothing, but syncs an earlier unsynced save", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem);
    const st = await open(fs);
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    const ops = fs.opCount;
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 }, entries: [] });
    await st.save({});
    assert.equal(fs.opCount, ops);
    // ... unless an earlier save was not synced: a synced save makes it durable.
    await st.save({
      hardState: { term: 1, vote: 1, commit: 0 },
      entries: [entry(1, 1)],
      mustSync: false,
    });
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    assert.equal(fs.count("datasync"), 3);
    const crashed = await open(mem.crashClone({ unsyncedRetention: 0 }));
    assert.equal(crashed.lastIndex(), 1);
    await crashed.close();
    await st.close();
  });

  test("each save is one append and one fdatasync (none with mustSync false); a rotation adds one directory fsync", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem, { keepLog: true });
    const st = await open(fs, { segmentBytes: 600 });
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    let rotations = 0;
    for (let i = 1; i <= 60; i++) {
      const segments = st.segmentNames().length;
      const before = { ...fs.counts };
      await st.save({
        entries: range(i * 3 - 2, i * 3, 1),
        hardState: { term: 1, vote: 1, commit: i * 3 - 3 },
        mustSync: i % 10 !== 0,
      });
      const d = (k: keyof typeof before) => fs.counts[k] - before[k];
      const rotated = st.segmentNames().length > segments;
      if (rotated) rotations++;
      assert.equal(d("append"), 1, `save ${i}: appends`);
      assert.equal(d("datasync") + d("sync"), i % 10 === 0 ? 0 : 1, `save ${i}: fsyncs of files`);
      assert.equal(d("syncDir"), rotated ? 1 : 0, `save ${i}: directory fsyncs`);
      assert.equal(d("createWritable"), rotated ? 1 : 0, `save ${i}: files created`);
    }
    assert.ok(rotations >= 3, `rotations: ${rotations}`);
    await st.close();
  });

  test("a new segment's name is durable (directory fsync) before the save that starts it resolves", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem, { keepLog: true });
    const st = await open(fs, { segmentBytes: 120 });
    await st.save({ hardState: { term: 1, vote: 1, commit: 0 } });
    for (let i = 1; i <= 20; i++) await st.save({ entries: [entry(i, 1)] });
    const creates = fs.log.flatMap((op, i) => (op.kind === "createWritable" ? [i] : []));
    assert.ok(creates.length >= 3);
    for (const c of creates) {
      const rest = fs.log.slice(c);
      const dirSync = rest.findIndex((op) => op.kind === "syncDir");
      const nextCreate = rest.findIndex((op, i) => i > 0 && op.kind === "createWritable");
      assert.ok(dirSync > 0 && (nextCreate < 0 || dirSync < nextCreate), `create at op ${c}`);
    }
    // Power loss right now keeps every segment.
    const clone = mem.crashClone({ unsyncedRetention: 0 });
    const again = await open(clone);
    assert.equal(again.lastIndex(), 20);
    await again.close();
    await st.close();
  });

  test("writes issued together are applied one at a time, in call order", async () => {
    const fs = new MemoryFileSystem();
    let st = await open(fs);
    const writes: Promise<unknown>[] = [st.save({ hardState: { term: 1, vote: 1, commit: 0 } })];
    for (let i = 1; i <= 30; i++) {
      writes.push(
        st.save({ entries: [entry(i, 1)], hardState: { term: 1, vote: 1, commit: i - 1 } }),
      );
      if (i === 20)
        writes.push(st.createSnapshot(15, { voters: [1], learners: [] }, new Uint8Array()));
      if (i === 25) writes.push(st.compact(10));
    }
    const bad = st.save({ entries: [entry(40, 1)] });
    writes.push(st.save({ entries: [entry(31, 2)], hardState: { term: 2, vote: 0, commit: 30 } }));
    await Promise.all(writes);
    await assert.rejects(bad, (e) => isRaftError(e, "INVALID_ARGUMENT"));
    assert.equal(st.firstIndex(), 11);
    assert.equal(st.lastIndex(), 31);
    assert.equal(st.snapshot().metadata.index, 15);
    st = await reopen(st, fs);
    assert.equal(st.lastIndex(), 31);
    assert.equal(st.term(31), 2);
    await st.close();
  });

  test("reads answer from memory during a write and show it only once it is durable", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const st = await open(fs);
    await st.save({ entries: [entry(1, 1)], hardState: { term: 1, vote: 0, commit: 0 } });
    let seenDuring = -1;
    fs.setOnOp((op) => {
      if (op.kind === "datasync") seenDuring = st.lastIndex();
    });
    await st.save({ entries: [entry(2, 1)] });
    assert.equal(seenDuring, 1);
    assert.equal(st.lastIndex(), 2);
    await st.close();
  });

  test("a failed fdatasync fails the save with IO_ERROR; later writes get READ_ONLY; reopening recovers", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem, { dropUnsyncedOnSyncFailure: true });
    let st = await open(fs);
    await st.save({ entries: range(1, 3, 1), hardState: { term: 1, vote: 0, commit: 1 } });
    fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === "datasync"));
    await rejects(st.save({ entries: [entry(4, 1)] }), "IO_ERROR");
    fs.setInjector(undefined);
    assert.equal(st.lastIndex(), 3, "the failed save is not visible");
    await rejects(st.save({ entries: [entry(4, 1)] }), "READ_ONLY");
    await rejects(st.compact(1), "READ_ONLY");
    await st.close();
    await rejects(st.save({}), "CLOSED");
    st = await open(fs);
    assert.equal(st.lastIndex(), 3);
    assert.equal(st.recovery.damage, undefined);
    await st.save({ entries: [entry(4, 1)] });
    await st.close();
  });

  test("the directory is locked: a second open fails with LOCKED until the first closes", async () => {
    const fs = new MemoryFileSystem();
    const st = await open(fs);
    await rejects(open(fs), "LOCKED");
    await st.close();
    await st.close();
    const again = await open(fs);
    await again.close();
  });

  test("on the real file system: round trip, lock, files 0600 in a directory 0700", async () => {
    const tmp = tempDir();
    try {
      const fs = new RealFileSystem();
      const dir = `${tmp.path}/raft`;
      let st = await RaftLogStorage.open(fs, dir, { preallocateBytes: 64 * 1024 });
      await rejects(RaftLogStorage.open(fs, dir), "LOCKED");
      await st.save({ entries: range(1, 100, 1), hardState: { term: 1, vote: 2, commit: 50 } });
      await st.close();
      st = await RaftLogStorage.open(fs, dir);
      assert.equal(st.lastIndex(), 100);
      assert.deepEqual(st.initialState().hardState, { term: 1, vote: 2, commit: 50 });
      assert.equal(statSync(dir).mode & 0o777, 0o700);
      for (const name of st.segmentNames()) {
        assert.equal(statSync(`${dir}/${name}`).mode & 0o777, 0o600, name);
      }
      await st.close();
    } finally {
      tmp.remove();
    }
  });

  test("a seeded model run, reopening after every operation, matches the model", async () => {
    const seed = testSeed();
    const r = rng(seed);
    const fs = new MemoryFileSystem();
    const options = { segmentBytes: 1500 };
    const model = new LogModel();
    let st = await open(fs, options);
    for (let i = 0; i < 150; i++) {
      const op = nextOp(model, r, { maxData: 120, unsyncedShare: 0.2, reopenShare: 0 });
      await applyToStorage(st, op);
      model.apply(op);
      assert.deepEqual(
        viewOf(st),
        model.view(),
        `seed ${seed} (KV_SEED=${seed}), op ${i} ${op.kind}`,
      );
      st = await reopen(st, fs, options);
      assert.deepEqual(viewOf(st), model.view(), `seed ${seed}, after reopening at op ${i}`);
      assert.equal(st.recovery.damage, undefined, `seed ${seed}, op ${i}`);
      assert.ok(
        st.segmentNames().length < 40,
        `seed ${seed}: segments pile up (${st.segmentNames().length})`,
      );
    }
    await st.close();
  });
});
