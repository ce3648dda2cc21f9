/**
 * The node driver applies a Ready's committed entries while the Ready is persisted only
 * when they were persisted by an earlier Ready (and are no membership change, and there
 * is no snapshot); otherwise strictly after the save. Driven with a scripted node and a
 * log whose save the test completes, so the order is observed, not inferred from timing.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RawNode, Ready } from "../../src/raft/raw-node.js";
import type { RaftLogStorage } from "../../src/raft/storage/raft-log-storage.js";
import type { Entry, EntryType, Message } from "../../src/raft/types.js";
import { NodeDriver } from "../../src/replication/node-driver.js";
import { waitFor } from "../support/wait-for.js";

function entry(index: number, type: EntryType = "normal"): Entry {
  return { term: 1, index, type, data: new Uint8Array(0) };
}

function readyOf(entries: Entry[], committedEntries: Entry[]): Ready {
  return {
    softState: undefined,
    hardState: { term: 1, vote: 0, commit: committedEntries.at(-1)?.index ?? 0 },
    entries,
    snapshot: undefined,
    messages: [],
    messagesAfterPersist: [],
    committedEntries,
    readStates: [],
    mustSync: entries.length > 0,
  };
}

/** One scripted Ready; records what happened, in order; the test ends the save. */
async function runOne(rd: Ready, failSave = false, applyMs = 0, failApply = false) {
  const events: string[] = [];
  let given = false;
  const node = {
    hasReady: () => !given,
    ready: () => {
      given = true;
      return rd;
    },
    advance: () => events.push("advance"),
    takeMessages: (): Message[] => [],
    commitUntold: () => false,
    tick: () => {},
  };
  let endSave!: (err?: Error) => void;
  const log = {
    save: () => {
      events.push("save started");
      return new Promise<void>((resolve, reject) => {
        endSave = (err) => {
          events.push(err === undefined ? "save done" : "save failed");
          if (err === undefined) resolve();
          else reject(err);
        };
      });
    },
  };
  let failed: unknown;
  const driver = new NodeDriver(
    node as unknown as RawNode,
    log as unknown as RaftLogStorage,
    {
      send: () => {},
      softState: () => {},
      installSnapshot: async () => {},
      apply: async (entries) => {
        events.push(`apply ${entries.map((e) => e.index).join(",")}`);
        await new Promise((r) => (applyMs > 0 ? setTimeout(r, applyMs) : setImmediate(r)));
        if (failApply) {
          events.push("apply failed");
          throw new Error("apply failed");
        }
        events.push("applied");
      },
      readStates: () => {},
      afterApply: async () => {},
      advanced: () => {},
      tick: () => {},
      failed: (err) => {
        failed = err;
        events.push("failed");
      },
    },
    60_000,
  );
  driver.start();
  await waitFor(() => events.includes("save started"), "the save started");
  // Let anything that does not wait for the save run first.
  await new Promise((r) => setTimeout(r, 20));
  endSave(failSave ? new Error("fsync failed") : undefined);
  await waitFor(() => events.includes("advance") || events.includes("failed"), "the cycle ended");
  await driver.stop();
  return { events, failed, driver };
}

describe("node driver: when committed entries are applied", () => {
  test("entries persisted by an earlier Ready are applied while this Ready's save is in flight", async () => {
    const { events, driver } = await runOne(readyOf([entry(5), entry(6)], [entry(3), entry(4)]));
    assert.deepEqual(events, ["save started", "apply 3,4", "applied", "save done", "advance"]);
    assert.equal(driver.earlyApplies, 1);
  });

  test("committed entries of this Ready's own save are applied only once it is durable", async () => {
    const { events, driver } = await runOne(readyOf([entry(4), entry(5)], [entry(3), entry(4)]));
    assert.deepEqual(events, ["save started", "save done", "apply 3,4", "applied", "advance"]);
    assert.equal(driver.earlyApplies, 0);
  });

  test("a membership change is applied only after the save", async () => {
    const { events } = await runOne(readyOf([entry(5)], [entry(3), entry(4, "confChange")]));
    assert.deepEqual(events, ["save started", "save done", "apply 3,4", "applied", "advance"]);
  });

  test("a failed save is reported once the apply in flight ended, and nothing advances", async () => {
    // The apply outlasts the save: the failure waits for it (one cycle at a time).
    const { events, failed } = await runOne(readyOf([entry(5)], [entry(4)]), true, 200);
    assert.deepEqual(events, ["save started", "apply 4", "save failed", "applied", "failed"]);
    assert.match(String(failed), /fsync failed/);
  });

  test("an apply that fails while the save runs stops the driver once the save ended", async () => {
    const { events, failed } = await runOne(readyOf([entry(5)], [entry(4)]), false, 0, true);
    assert.deepEqual(events, ["save started", "apply 4", "apply failed", "save done", "failed"]);
    assert.match(String(failed), /apply failed/);
  });
});
