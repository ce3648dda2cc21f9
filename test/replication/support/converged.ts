/** Checks that every running member of a test cluster holds the same user data. */
import assert from "node:assert/strict";
import type { ReplicatedStore } from "../../../src/replication/replicated-store.js";
import { bytes, TestCluster, text } from "./test-cluster.js";

/**
 * Every member's user data, as a serializable scan sees it, once all applied `index`; with
 * each key's revisions and version, and the store's revision, as a serializable view of
 * the multi-version state sees them.
 */
export async function contents(s: ReplicatedStore): Promise<string> {
  const it = s.iterator({ serializable: true });
  const rows: string[] = [];
  for (;;) {
    const batch = await it.nextBatch(1000);
    for (const [k, v] of batch) rows.push(`${text(k)}=${text(v)}`);
    if (batch.length < 1000) break;
  }
  it.close();
  const view = await s.view({ serializable: true });
  try {
    const all = await view.range(new Uint8Array([0]), new Uint8Array([0]));
    rows.push(`revision ${view.revision}, compacted ${view.compactRevision}`);
    for (const kv of all.kvs) {
      rows.push(`${text(kv.key)}: ${kv.createRevision}/${kv.modRevision}/${kv.version}`);
    }
  } finally {
    view.release();
  }
  return rows.join("\n");
}

export async function assertConverged(c: TestCluster, context: string): Promise<void> {
  const leader = await c.waitForLeader(20_000);
  // A write through the leader commits an entry of the current term everywhere.
  await TestCluster.retry(() => leader.put(bytes("__barrier"), bytes("x")), 20_000);
  const commit = leader.status().commit;
  await c.waitForApplied(commit, 20_000);
  const all = await Promise.all(c.running().map((s) => contents(s)));
  for (let i = 1; i < all.length; i++)
    assert.equal(all[i], all[0], `${context}: member ${c.running()[i]!.name} differs`);
}
