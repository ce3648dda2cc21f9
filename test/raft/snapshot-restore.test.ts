/**
 * What a follower does with a snapshot it does not need (Raft Figure 13, steps 6 and 7):
 * one whose last entry its log already holds only advances its commit index and keeps the
 * entries after it; one at or below its commit index changes nothing, even when the
 * follower has compacted its log past the snapshot's index. The simulation rarely reaches
 * these paths (its leaders send snapshots only to followers that lack the entries), so
 * they are checked here, by hand.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Message, Snapshot } from "../../src/raft/types.js";
import { drain, message, node, storageWith, voters } from "./support/nodes.js";

const THREE = voters(1, 2, 3);

function snapMessage(index: number, term: number): Message {
  const snapshot: Snapshot = {
    metadata: { index, term, confState: THREE },
    data: new Uint8Array(0),
  };
  return message({ type: "snap", from: 1, to: 2, term: 1, snapshot });
}

test("a follower whose log holds the snapshot's last entry keeps the entries after it", () => {
  const storage = storageWith(THREE, [1, 1, 1, 1, 1, 1], { term: 1, vote: 1, commit: 2 });
  const n = node(2, storage);
  n.step(snapMessage(4, 1));
  const { sent, readies } = drain(n, storage);
  assert.ok(
    readies.every((rd) => rd.snapshot === undefined),
    "no snapshot is installed",
  );
  const st = n.status();
  assert.equal(st.commit, 4);
  assert.equal(st.lastIndex, 6, "the entries after the snapshot are kept");
  assert.equal(storage.lastIndex(), 6);
  assert.equal(storage.firstIndex(), 1);
  const acks = sent.filter((m) => m.type === "appResp" && m.to === 1);
  assert.equal(acks.length, 1);
  assert.equal(acks[0]!.reject, false);
});

test("a snapshot at or below the commit index changes nothing, even below a compacted log", () => {
  const storage = storageWith(THREE, [1, 1, 1, 1, 1, 1], { term: 1, vote: 1, commit: 6 });
  storage.createSnapshot(5, THREE, new Uint8Array(0));
  storage.compact(5);
  const n = node(2, storage, { applied: 6 });
  for (const index of [3, 5, 6]) {
    n.step(snapMessage(index, 1));
    const { readies } = drain(n, storage);
    assert.ok(
      readies.every((rd) => rd.snapshot === undefined && rd.committedEntries.length === 0),
      `snapshot ${index} is ignored`,
    );
    const st = n.status();
    assert.equal(st.commit, 6, `snapshot ${index} leaves the commit index`);
    assert.equal(st.firstIndex, 6, `snapshot ${index} leaves the log`);
    assert.equal(st.lastIndex, 6, `snapshot ${index} leaves the log`);
    assert.equal(storage.lastIndex(), 6);
  }
});
