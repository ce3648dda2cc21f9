/**
 * kill -9 loop: a child process writes random durable batches and prints an ack for
 * each; the parent SIGKILLs it at a random moment, reopens the store, and checks that
 * every acknowledged batch is there and that the state is exactly a prefix of the
 * history (no torn batch, no hole). Each round continues on the same directory.
 *
 * Default: 25 kills. KV_KILLS=<n> sets the count (KV_STRESS=1: 500). A failure prints the
 * seed; KV_SEED=<seed> replays the same batches (the kill moments are real time).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { open } from "../../src/index.js";
import { exited, fixture, startNode } from "../support/child.js";
import {
  type Batch,
  batchGenerator,
  diffStates,
  type Model,
  matchingPrefix,
  readState,
} from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

const KEYS = 100;
const KILLS = Number(process.env["KV_KILLS"] ?? (process.env["KV_STRESS"] ? 500 : 25));

test(`kill -9 of a writing process ${KILLS} times loses no acknowledged write and shows no torn batch`, async (t) => {
  const dir = tempDir();
  t.after(dir.remove);
  const seed = testSeed();
  const r = rng(seed);
  let state: Model = new Map();
  let firstId = 0;
  let totalAcked = 0;
  for (let round = 0; round < KILLS; round++) {
    const roundSeed = seed + round;
    const child = startNode(fixture("random-writer"), [
      dir.path,
      String(roundSeed),
      String(firstId),
      String(KEYS),
    ]);
    let lastAck = -1;
    let ready = false;
    let buf = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      buf += chunk.toString("utf8");
      let i = buf.indexOf("\n");
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === "ready") ready = true;
        else if (line.startsWith("ack ")) lastAck = Math.max(lastAck, Number(line.slice(4)));
        i = buf.indexOf("\n");
      }
    });
    // Kill at a random moment: every fifth round during start-up or recovery, the others
    // while writing (after "ready", so a loaded machine still gets writes in).
    if (round % 5 !== 4) {
      const deadline = Date.now() + 20_000;
      while (!ready && child.exitCode === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, randInt(r, 200)));
    child.kill("SIGKILL");
    await exited(child);
    // Regenerate the batches the child could have issued (acks are in id order).
    const next = batchGenerator(roundSeed, { keys: KEYS, maxOps: 5, firstId });
    const history: Batch[] = [];
    const acked = lastAck < 0 ? 0 : lastAck - firstId + 1;
    // The child has at most 4 batches in flight beyond the last ack it printed... but acks
    // it printed after our last read may exist too; allow a generous window.
    for (let i = 0; i < acked + 5000; i++) history.push(next());
    const db = await open(dir.path);
    const actual = await readState((k) => db.get(k), KEYS);
    await db.close();
    const m = matchingPrefix(state, history, acked, actual);
    if (m < 0) {
      assert.fail(
        `round ${round}, seed ${roundSeed} (KV_SEED=${seed}): the state after kill -9 is no ` +
          `prefix of history covering ${acked} acked batches (ready=${ready})\n${diffStates(state, actual)}`,
      );
    }
    totalAcked += acked;
    state = actual;
    firstId += m;
    // Batches beyond m were never applied; the next round starts its ids after m, so the
    // history stays a single sequence.
  }
  t.diagnostic(`${KILLS} kills, ${totalAcked} acknowledged batches checked, seed ${seed}`);
  assert.ok(totalAcked > KILLS, `only ${totalAcked} acknowledged batches in ${KILLS} rounds`);
});
