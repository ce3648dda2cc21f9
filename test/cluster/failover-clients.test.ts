/**
 * Failover as a client sees it (docs/cluster.md, "Failover"): one KvClient with the
 * endpoint list and its default deadline writes continuously (a put, then an increment of
 * a counter by compare-and-swap, over and over) while the leader of a three-member
 * cluster, run with the CLI's default timing, is killed with SIGKILL and started again,
 * KILLS times (3; 20 with KV_STRESS=1). Each time, the first write acknowledged after the
 * kill comes within 1.5 s of it; every call ends within its deadline; every write is
 * acknowledged (the client retries across members under its session), the counter equals
 * the increments acknowledged (a retried increment is applied once and answered with its
 * first result), and every acknowledged put is there. Once, the CLI too: `put` processes
 * with the endpoint list started every 100 ms around a kill; the first that started after
 * the kill and succeeded did so within 1.5 s of it (its process start included).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { KvClient } from "../../src/client/kv-client.js";
import { ProcessCluster } from "../support/cluster-processes.js";
import { runCli } from "../support/server-process.js";
import { waitFor } from "../support/wait-for.js";

const STRESS = process.env["KV_STRESS"] === "1";
const KILLS = STRESS ? 20 : 3;
const NAMES = ["n1", "n2", "n3"];
const TARGET_MS = 1500;
/** KvClient's default deadline (a call must end within it, plus scheduling slack). */
const DEFAULT_TIMEOUT_MS = 10_000;
const SLACK_MS = 500;

let cluster: ProcessCluster;

before(async () => {
  // The CLI's default timing (tick 100 ms, election after 6-12 ticks), as a user runs it.
  cluster = await ProcessCluster.start(NAMES, { timing: [] });
});

after(async () => {
  await cluster?.stop();
});

async function leaderName(): Promise<string> {
  let name: string | undefined;
  await waitFor(
    async () => {
      const running = NAMES.filter((n) => cluster.running(n));
      const ids = await Promise.all(
        running.map((n) =>
          cluster
            .client([n], 1000)
            .status()
            .then((s) => s.leaderId.toString(16))
            .catch(() => "0"),
        ),
      );
      const agreed = new Set(ids);
      if (agreed.size !== 1 || agreed.has("0")) return false;
      name = [...cluster.members.values()].find((m) => m.memberId === ids[0])?.name;
      return name !== undefined && running.includes(name);
    },
    "a leader every running member agrees on",
    15_000,
  );
  return name!;
}

interface Call {
  started: number;
  ended: number;
  ok: boolean;
  error: string;
}

/** Writes until `stop()`: put k<i>, then counter n -> n+1, each awaited. */
function writer(client: KvClient) {
  const calls: Call[] = [];
  const acked: string[] = [];
  let increments = 0;
  let counter = 0;
  let running = true;
  const timed = async (op: () => Promise<void>) => {
    const started = Date.now();
    try {
      await op();
      calls.push({ started, ended: Date.now(), ok: true, error: "" });
    } catch (err) {
      calls.push({ started, ended: Date.now(), ok: false, error: String(err) });
    }
  };
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const key = `k${i}`;
      await timed(async () => {
        await client.put(key, `v${i}`);
        acked.push(key);
      });
      await timed(async () => {
        const r = await client.compareAndSwap(
          "counter",
          counter === 0 ? undefined : String(counter),
          String(counter + 1),
        );
        assert.ok(
          r.applied,
          `increment ${counter} -> ${counter + 1} not applied: now ${String(r.current)}`,
        );
        counter++;
        increments++;
      });
    }
  })();
  return {
    calls,
    acked,
    get increments() {
      return increments;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

test(`a client writing through ${KILLS} leader kills: the first write after each within ${TARGET_MS} ms, each applied once`, async () => {
  const client = cluster.client(undefined, DEFAULT_TIMEOUT_MS);
  const w = writer(client);
  const gaps: number[] = [];
  try {
    for (let round = 0; round < KILLS; round++) {
      const lead = await leaderName();
      // Some writes before the kill.
      await new Promise((r) => setTimeout(r, 300));
      const killAt = Date.now();
      await cluster.signal(lead, "SIGKILL");
      // The first write started after the kill (the one in flight then may have been
      // answered by the old leader just before it died).
      await waitFor(
        async () => w.calls.some((c) => c.ok && c.started >= killAt),
        `a write acknowledged after killing ${lead}`,
        2 * DEFAULT_TIMEOUT_MS,
      );
      const first = w.calls.find((c) => c.ok && c.started >= killAt)!;
      gaps.push(first.ended - killAt);
      await cluster.startMember(lead);
    }
  } finally {
    await w.stop();
  }
  const failed = w.calls.filter((c) => !c.ok);
  assert.deepEqual(failed, [], "every write was acknowledged");
  const longest = Math.max(...w.calls.map((c) => c.ended - c.started));
  assert.ok(longest <= DEFAULT_TIMEOUT_MS + SLACK_MS, `a call took ${longest} ms`);
  assert.ok(
    Math.max(...gaps) <= TARGET_MS,
    `from a kill to the first acknowledged write: ${gaps.join(", ")} ms`,
  );
  // Applied once: the counter is the increments acknowledged; every acknowledged put is there.
  const check = cluster.client(undefined, DEFAULT_TIMEOUT_MS);
  assert.equal((await check.get("counter"))?.toString(), String(w.increments));
  for (const key of w.acked) assert.ok((await check.get(key)) !== undefined, key);
  console.log(
    `# kill -> first acknowledged write (ms): ${gaps.join(", ")}; ${w.calls.length} calls`,
  );
});

test("the CLI with the endpoint list: the first put started after a kill succeeds within 1.5 s of it", async () => {
  const addr = NAMES.map((n) => cluster.member(n).clientAddress).join(",");
  const lead = await leaderName();
  const runs: Array<
    Promise<{ started: number; ended: number; code: number | null; stderr: string }>
  > = [];
  let killAt = 0;
  for (let i = 0; i < 30; i++) {
    const started = Date.now();
    runs.push(
      runCli(["put", `cli${i}`, `v${i}`, "--addr", addr]).then((r) => ({
        started,
        ended: Date.now(),
        code: r.code,
        stderr: r.stderr,
      })),
    );
    if (i === 5) {
      killAt = Date.now();
      await cluster.signal(lead, "SIGKILL");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const results = await Promise.all(runs);
  await cluster.startMember(lead);
  const failed = results.filter((r) => r.code !== 0);
  assert.deepEqual(
    failed.map((r) => r.stderr),
    [],
    "every put exited 0",
  );
  const first = results.find((r) => r.started >= killAt)!;
  const firstOk = results
    .filter((r) => r.started >= killAt)
    .reduce((a, b) => (b.ended < a.ended ? b : a), first);
  assert.ok(
    firstOk.ended - killAt <= TARGET_MS,
    `first CLI put after the kill: ${firstOk.ended - killAt} ms`,
  );
  const longest = Math.max(...results.map((r) => r.ended - r.started));
  assert.ok(longest <= DEFAULT_TIMEOUT_MS + 2 * SLACK_MS, `a CLI put took ${longest} ms`);
});
