/**
 * A snapshot's files are written beside the Raft cycles, not on them: once its content is
 * fixed, writes keep committing while the files are linked, copied and described; the
 * Raft log records the snapshot only once it is written; closing the member waits for it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { waitFor } from "../support/wait-for.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

/** A MemoryFileSystem whose hard links into a snapshot directory wait while `held`. */
class GatedFileSystem extends MemoryFileSystem {
  held = true;
  waiting = 0;
  private readonly waiters: (() => void)[] = [];

  override async link(from: string, to: string): Promise<void> {
    if (this.held && to.includes("/snap/")) {
      this.waiting++;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return super.link(from, to);
  }

  open(): void {
    this.held = false;
    for (const w of this.waiters.splice(0)) w();
  }
}

/** Snapshots every 30 entries; memtables of 4 KiB, so that the store has tables to link. */
const SMALL = {
  snapshotEntries: 30,
  catchUpEntries: 5,
  storeOptions: { writeBufferSize: 4096 },
};
const VALUE = "v".repeat(200);

describe("snapshot writing", () => {
  test("writes commit while a snapshot's files are written; the log records it after", async (t) => {
    const c = TestCluster.prepare({ size: 1, member: SMALL });
    const fs = new GatedFileSystem();
    c.slot("n1").fs = fs;
    const n1 = await c.startMember("n1");
    t.after(() => c.close());
    await c.waitForLeader();
    const firstIndex = n1.status().firstIndex;
    for (let i = 0; i < 100; i++) {
      await TestCluster.retry(() => n1.put(bytes(`k${i}`), bytes(`${i}${VALUE}`)), 5_000);
    }
    assert.ok(fs.waiting >= 1, "a snapshot is being written (its links wait)");
    const events = c.slot("n1").events;
    assert.ok(!events.some((e) => e.type === "snapshot-created"), "not recorded before written");
    assert.equal(n1.status().firstIndex, firstIndex, "no compaction behind an unwritten snapshot");
    fs.open();
    await waitFor(() => events.some((e) => e.type === "snapshot-created"), "the snapshot recorded");
    await waitFor(() => n1.status().firstIndex > firstIndex, "the log compacted behind it");
    assert.equal(text(await n1.get(bytes("k99"))), `99${VALUE}`);
  });

  test("closing a member waits for the snapshot being written", async () => {
    const c = TestCluster.prepare({ size: 1, member: SMALL });
    const fs = new GatedFileSystem();
    c.slot("n1").fs = fs;
    const n1 = await c.startMember("n1");
    await c.waitForLeader();
    for (let i = 0; i < 40; i++)
      await TestCluster.retry(() => n1.put(bytes(`k${i}`), bytes(VALUE)));
    await waitFor(() => fs.waiting >= 1, "a snapshot being written");
    let closed = false;
    const closing = c.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(closed, false, "close waits for the snapshot");
    fs.open();
    await closing;
    // The member reopens from what it left (the snapshot finished before the store closed).
    const again = await c.startMember("n1");
    try {
      await c.waitForLeader();
      assert.equal(text(await again.get(bytes("k39"))), VALUE);
    } finally {
      await c.close();
    }
  });
});
