/**
 * Smoke test of cluster mode with real processes: three `kv-engine serve` members on
 * 127.0.0.1, a TCP proxy per directed peer link (the dial override test hook), and the
 * client, CLI and health service against them. The steps share one cluster and run in
 * order: writes and reads across members, CAS, isolation and one-way cuts (health
 * NOT_SERVING, no linearizable answer), kill -9 of the leader and its restart, a fourth
 * member added from the CLI's printed flags and removed, leadership transfer, status,
 * SIGTERM on the leader handing leadership over. The chaos suite (another file) goes
 * further.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import type { KvClient } from "../../src/client/kv-client.js";
import { isKvClientError } from "../../src/client/kv-client-error.js";
import { freePort, ProcessCluster, TEST_TIMING } from "../support/cluster-processes.js";
import { runCli } from "../support/server-process.js";
import { waitFor } from "../support/wait-for.js";

const NAMES = ["n1", "n2", "n3"];
/** A liveness bound for elections (timeouts of 500-1000 ms at the test timing). */
const ELECTION_BOUND_MS = 8000;

let cluster: ProcessCluster;
let all: KvClient;

/** The name of the member every running member agrees leads, or undefined. */
async function leader(
  c: ProcessCluster,
  among = [...c.members.keys()],
): Promise<string | undefined> {
  const running = among.filter((n) => c.running(n));
  const statuses = await Promise.all(
    running.map((n) =>
      c
        .client([n], 2000)
        .status()
        .catch(() => undefined),
    ),
  );
  const leaders = new Set(statuses.map((s) => s?.leaderId ?? 0));
  if (leaders.size !== 1 || leaders.has(0)) return undefined;
  const id = [...leaders][0]!.toString(16);
  const name = [...c.members.values()].find((m) => m.memberId === id)?.name;
  return name !== undefined && running.includes(name) ? name : undefined;
}

async function waitLeader(c: ProcessCluster, among?: string[]): Promise<string> {
  let name: string | undefined;
  await waitFor(
    async () => {
      name = await leader(c, among);
      return name !== undefined;
    },
    "a leader every member agrees on",
    ELECTION_BOUND_MS,
  );
  return name!;
}

before(async () => {
  cluster = await ProcessCluster.start(NAMES, { proxies: true });
  all = cluster.client(undefined, 8000);
});

after(async () => {
  await cluster?.stop();
});

describe("a three-member cluster of processes", () => {
  test("elects a leader; every member is SERVING", async () => {
    await waitLeader(cluster);
    for (const n of NAMES) {
      await waitFor(async () => (await cluster.healthOf(n)) === "SERVING", `${n} SERVING`);
    }
  });

  test("a write on one member is read linearizably on another, a follower forwards writes", async () => {
    const lead = await waitLeader(cluster);
    const followers = NAMES.filter((n) => n !== lead);
    const viaFollower = cluster.client([followers[0]!]);
    await viaFollower.put("k1", "v1");
    assert.equal((await cluster.client([followers[1]!]).get("k1"))?.toString(), "v1");
    assert.equal((await cluster.client([lead]).get("k1"))?.toString(), "v1");
    await viaFollower.write([
      { type: "put", key: "k2", value: "v2" },
      { type: "delete", key: "k1" },
    ]);
    assert.equal(await cluster.client([lead]).get("k1"), undefined);
    const rows = await cluster.client([followers[1]!]).scanAll();
    assert.deepEqual(
      rows.map(([k, v]) => `${k}=${v}`),
      ["k2=v2"],
    );
    // A serializable read answers from the member's own state (here: caught up soon).
    const local = cluster.client([followers[1]!]);
    await waitFor(
      async () => (await local.get("k2", { serializable: true }))?.toString() === "v2",
      "the serializable read to see k2",
    );
    const serial = await local.scanAll(undefined, undefined, 0, { serializable: true });
    assert.equal(serial.length, 1);
  });

  test("compare-and-swap is decided once, through any member", async () => {
    const a = cluster.client(["n1"]);
    const b = cluster.client(["n2"]);
    assert.deepEqual(await a.compareAndSwap("lock", undefined, "a"), {
      applied: true,
      current: Buffer.from("a"),
    });
    const second = await b.compareAndSwap("lock", undefined, "b");
    assert.equal(second.applied, false);
    assert.equal(second.current?.toString(), "a");
    assert.equal((await b.compareAndSwap("lock", "a", undefined)).applied, true);
    assert.equal(await a.get("lock"), undefined);
    // The CLI's cas: exit 0 when applied, 1 when not.
    const addr = cluster.member("n3").clientAddress;
    const ok = await runCli(["cas", "c", "--expect-absent", "--value", "1", "--addr", addr]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, "applied\n1\n");
    const no = await runCli(["cas", "c", "--expect", "0", "--value", "2", "--addr", addr]);
    assert.equal(no.code, 1, no.stderr);
    assert.equal(no.stdout, "not applied\n1\n");
  });

  test("an isolated member turns NOT_SERVING and answers no linearizable read; healed, it serves again", async () => {
    const lead = await waitLeader(cluster);
    const victim = NAMES.find((n) => n !== lead)!;
    await all.put("before-cut", "1");
    const cut = cluster.client([victim], 1500);
    await waitFor(
      async () => (await cut.get("before-cut", { serializable: true })) !== undefined,
      `${victim} to apply the write`,
    );
    cluster.isolate(victim);
    try {
      await isolated(victim, cut);
    } finally {
      cluster.healAll();
    }
    await waitFor(
      async () => (await cluster.healthOf(victim)) === "SERVING",
      `${victim} SERVING after healing`,
      ELECTION_BOUND_MS,
    );
    assert.equal((await cluster.client([victim]).get("during-cut"))?.toString(), "1");
  });

  async function isolated(victim: string, cut: KvClient): Promise<void> {
    await waitFor(
      async () => (await cluster.healthOf(victim)) === "NOT_SERVING",
      `${victim} NOT_SERVING while cut off`,
      ELECTION_BOUND_MS,
    );
    await assert.rejects(cut.get("before-cut"), (err: unknown) => {
      assert.ok(isKvClientError(err, status.UNAVAILABLE), String(err));
      return true;
    });
    // It still answers what it has locally when asked for a serializable read.
    assert.equal((await cut.get("before-cut", { serializable: true }))?.toString(), "1");
    // Writes through it are refused as not proposed (no leader known): safe to retry.
    await assert.rejects(
      cut.put("x", "1"),
      (err: unknown) => isKvClientError(err) && err.notProposed,
    );
    // The majority goes on; a client listing every member gets its writes through.
    await all.put("during-cut", "1");
  }

  test("a one-way cut (nothing reaches a member, it still sends) makes it NOT_SERVING; the rest serve", async () => {
    const lead = await waitLeader(cluster);
    const victim = NAMES.find((n) => n !== lead)!;
    for (const n of NAMES)
      if (n !== victim) cluster.proxies.get(`${n}>${victim}`)!.cut("blackhole");
    try {
      await waitFor(
        async () => (await cluster.healthOf(victim)) === "NOT_SERVING",
        `${victim} NOT_SERVING while deaf`,
        ELECTION_BOUND_MS,
      );
      await cluster.client(NAMES.filter((n) => n !== victim)).put("one-way", "1");
    } finally {
      cluster.healAll();
    }
    await waitFor(
      async () => (await cluster.healthOf(victim)) === "SERVING",
      `${victim} SERVING after healing`,
      ELECTION_BOUND_MS,
    );
    await waitLeader(cluster);
  });

  test("kill -9 of the leader: a new leader soon; the killed member restarts from its data and catches up", async () => {
    const old = await waitLeader(cluster);
    await all.put("before-kill", "1");
    await cluster.signal(old, "SIGKILL");
    const rest = NAMES.filter((n) => n !== old);
    const next = await waitLeader(cluster, rest);
    assert.notEqual(next, old);
    await all.put("after-kill", "2");
    await cluster.startMember(old);
    const back = cluster.client([old]);
    // Its client connection may still be backing off from the kill: the first calls may fail.
    await waitFor(
      () =>
        back.get("before-kill").then(
          (v) => v?.toString() === "1",
          () => false,
        ),
      "the restarted member to answer",
    );
    assert.equal((await back.get("after-kill"))?.toString(), "2");
    await waitLeader(cluster);
  });

  test("cluster add prints the flags a fourth member starts with; it catches up, is promoted, then removed", async () => {
    const addrs = NAMES.map((n) => cluster.member(n).clientAddress).join(",");
    const clientPort = await freePort();
    const peerPort = await freePort();
    const added = await runCli([
      "cluster",
      "add",
      "n4",
      "--peer-address",
      `127.0.0.1:${peerPort}`,
      "--addr",
      addrs,
    ]);
    assert.equal(added.code, 0, added.stderr);
    const flagsLine = added.stdout.split("\n").find((l) => l.includes("kv-engine serve"));
    assert.ok(flagsLine !== undefined, added.stdout);
    const flags = flagsLine.trim().split(/\s+/).slice(4); // drop "kv-engine serve --data-dir DIR"
    assert.ok(flags.includes("existing"));
    await cluster.startMember("n4", `127.0.0.1:${clientPort}`, `127.0.0.1:${peerPort}`, [
      "--port",
      String(clientPort),
      ...TEST_TIMING,
      ...flags,
    ]);
    const n4 = cluster.client(["n4"]);
    assert.equal((await n4.get("after-kill"))?.toString(), "2");
    await waitFor(
      async () => (await all.memberList()).members.find((m) => m.name === "n4")?.learner === false,
      "n4 promoted to voter",
      ELECTION_BOUND_MS,
    );
    const list = await runCli(["cluster", "list", "--addr", addrs]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /n4 +[0-9a-f]+ +voter/);
    const removed = await runCli(["cluster", "remove", "n4", "--addr", addrs]);
    assert.equal(removed.code, 0, removed.stderr);
    await waitFor(
      async () => (await cluster.healthOf("n4")) !== "SERVING",
      "the removed member not SERVING",
      ELECTION_BOUND_MS,
    );
    // Each member lists what it applied: the one answering may apply the removal a little
    // after n4 itself did.
    await waitFor(
      async () =>
        (await all.memberList()).members
          .map((m) => m.name)
          .sort()
          .join() === "n1,n2,n3",
      "the members to list n1, n2, n3",
      ELECTION_BOUND_MS,
    );
    // Until it is stopped, the removed member answers UNAVAILABLE (nothing done): a client
    // whose first endpoint it is goes on to the next, for writes as for reads.
    await assert.rejects(
      cluster.client(["n4"]).get("after-kill"),
      (err) => isKvClientError(err, status.UNAVAILABLE) && /was removed/.test(err.details),
    );
    const viaRemoved = cluster.client(["n4", "n1"]);
    await viaRemoved.put("after-remove", "3");
    assert.equal((await viaRemoved.get("after-remove"))?.toString(), "3");
    await cluster.signal("n4", "SIGTERM");
  });

  test("transfer-leader and status from the CLI", async () => {
    const addrs = NAMES.map((n) => cluster.member(n).clientAddress).join(",");
    const lead = await waitLeader(cluster, NAMES);
    const target = NAMES.find((n) => n !== lead)!;
    const moved = await runCli(["cluster", "transfer-leader", "--to", target, "--addr", addrs]);
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, new RegExp(`Leader is now ${target}`));
    assert.equal(await waitLeader(cluster, NAMES), target);
    const st = await runCli(["cluster", "status", "--addr", addrs]);
    assert.equal(st.code, 0, st.stderr);
    for (const n of NAMES) assert.match(st.stdout, new RegExp(`^${n} `, "m"));
    assert.match(st.stdout, new RegExp(`^${target} .* leader `, "m"));
    // The LEADER column names the leader, on every member's row.
    for (const n of NAMES) {
      assert.match(st.stdout, new RegExp(`^${n} +[0-9a-f]+ +\\S+ +\\w+ +\\d+ +${target} `, "m"));
    }
    const json = await runCli(["cluster", "status", "--json", "--addr", addrs]);
    const rows = json.stdout
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as {
            role: string;
            memberId: unknown;
            leaderId: unknown;
            clusterId: unknown;
            peers: { id: unknown }[];
          },
      );
    assert.equal(rows.filter((r) => r.role === "leader").length, 1);
    // One notation for member IDs: hex strings, as the listening line prints them.
    const ids = new Set([...cluster.members.values()].map((m) => m.memberId));
    for (const r of rows) {
      for (const id of [r.memberId, r.leaderId, ...r.peers.map((p) => p.id)]) {
        assert.ok(typeof id === "string" && ids.has(id), `member ID ${String(id)} in hex`);
      }
      assert.equal(r.clusterId, cluster.member("n1").clusterId);
    }
  });

  test("SIGTERM on the leader hands leadership over before it exits 0", async () => {
    const lead = await waitLeader(cluster, NAMES);
    const code = await cluster.signal(lead, "SIGTERM");
    assert.equal(code, 0);
    assert.match(cluster.member(lead).stderr, /leadership transferred to/);
    const rest = NAMES.filter((n) => n !== lead);
    const next = await waitLeader(cluster, rest);
    assert.notEqual(next, lead);
    await cluster.client(rest).put("after-sigterm", "1");
  });
});
