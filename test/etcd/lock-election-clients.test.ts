/**
 * etcdctl 3.4's `lock` and `elect`, unchanged, with two contenders (one waits until the
 * other releases), against a single node, a 1-member and a 3-member cluster (every
 * member's address given), and against Debian's etcd 3.4 for the expected output. etcdctl
 * runs etcd's recipes itself (clientv3/concurrency: a session lease kept alive, Txn,
 * Watch), so these exercise the Lease service too. etcdctl tests skip when it is not on
 * PATH, except in CI (test/support/etcd-process.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { exited } from "../support/child.js";
import { type EtcdProcess, onPath, requireBinary, startEtcd } from "../support/etcd-process.js";
import { ETCD_TARGETS, type EtcdTargetKind, startEtcdTarget } from "../support/etcd-targets.js";
import { type CtlChild, startCtl } from "../support/etcdctl-child.js";
import { waitFor } from "../support/wait-for.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The lines of each child with the contenders' lease IDs replaced by their names. */
function named(children: Record<string, CtlChild>, keys: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [who, c] of Object.entries(children)) {
    for (let line of c.lines()) {
      for (const [name, key] of Object.entries(keys)) line = line.replaceAll(key, name);
      out.push(`${who}: ${line}`);
    }
  }
  return out;
}

/** etcdctl lock: a holds L; b (`lock L -- cmd`) runs its command once a is interrupted. */
async function lockScenario(ctl: string, endpoints: readonly string[]): Promise<string[]> {
  const a = startCtl(ctl, endpoints, ["lock", "L"]);
  let b: CtlChild | undefined;
  try {
    await waitFor(() => a.lines().length >= 1, "a holding the lock");
    b = startCtl(ctl, endpoints, [
      "lock",
      "L",
      "--",
      "sh",
      "-c",
      'echo "b holds $ETCD_LOCK_KEY at revision $ETCD_LOCK_REV"',
    ]);
    await sleep(1000);
    assert.deepEqual(b.lines(), [], "b waits while a holds the lock");
    const aCode = await a.interrupt();
    await exited(b.child);
    const keys = {
      "<a>": a.lines()[0] ?? "?",
      "<b>": /L\/[0-9a-f]+/.exec(b.lines()[0] ?? "")?.[0] ?? "?",
    };
    return [...named({ a, b }, keys), `exit codes: a ${aCode}, b ${b.child.exitCode}`];
  } finally {
    await a.stop();
    await b?.stop();
  }
}

/** etcdctl elect: an observer (-l), a elected with p1, b waiting with p2 until a resigns. */
async function electScenario(ctl: string, endpoints: readonly string[]): Promise<string[]> {
  const obs = startCtl(ctl, endpoints, ["elect", "-l", "E"]);
  const a = startCtl(ctl, endpoints, ["elect", "E", "p1"]);
  let b: CtlChild | undefined;
  try {
    await waitFor(() => a.lines().length >= 2, "a elected");
    b = startCtl(ctl, endpoints, ["elect", "E", "p2"]);
    await waitFor(() => obs.lines().length >= 2, "the observer seeing a");
    await sleep(1000);
    assert.deepEqual(b.lines(), [], "b waits while a leads");
    const aCode = await a.interrupt();
    await waitFor(() => (b?.lines().length ?? 0) >= 2, "b elected");
    await waitFor(() => obs.lines().length >= 4, "the observer seeing b");
    const bCode = await b.interrupt();
    const obsCode = await obs.interrupt();
    const keys = { "<a>": a.lines()[0] ?? "?", "<b>": b.lines()[0] ?? "?" };
    return [
      ...named({ observer: obs, a, b }, keys),
      `exit codes: observer ${obsCode}, a ${aCode}, b ${bCode}`,
    ];
  } finally {
    await Promise.all([obs.stop(), a.stop(), b?.stop()]);
  }
}

const LOCK_EXPECTED = ["a: <a>", "b: b holds <b> at revision 4", "exit codes: a 0, b 0"];

const ELECT_EXPECTED = [
  "observer: <a>",
  "observer: p1",
  "observer: <b>",
  "observer: p2",
  "a: <a>",
  "a: p1",
  "b: <b>",
  "b: p2",
  "exit codes: observer 0, a 0, b 0",
];

for (const kind of [...ETCD_TARGETS, "etcd 3.4"] as const) {
  describe(`etcdctl lock and elect against ${kind === "etcd 3.4" ? "etcd 3.4" : `a ${kind}`}`, () => {
    let endpoints: readonly string[] = [];
    let stop: () => Promise<void> = async () => {};
    before(async () => {
      if (kind === "etcd 3.4") {
        const binary = onPath("etcd");
        if (binary === undefined) return; // each test skips (or fails in CI) below
        const e: EtcdProcess = await startEtcd(binary);
        endpoints = [e.address];
        stop = () => e.stop();
      } else {
        const target = await startEtcdTarget(kind as EtcdTargetKind);
        endpoints = target.endpoints;
        stop = () => target.stop();
      }
    });
    after(() => stop());

    const ready = async (t: TestContext): Promise<string | undefined> => {
      if (kind === "etcd 3.4" && requireBinary(t, "etcd") === undefined) return undefined;
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return undefined;
      return ctl;
    };

    test("lock: the second contender runs its command once the first is interrupted", async (t) => {
      const ctl = await ready(t);
      if (ctl === undefined) return;
      assert.deepEqual(await lockScenario(ctl, endpoints), LOCK_EXPECTED);
    });

    test("elect: the second campaigner leads once the first resigns; elect -l sees both", async (t) => {
      const ctl = await ready(t);
      if (ctl === undefined) return;
      assert.deepEqual(await electScenario(ctl, endpoints), ELECT_EXPECTED);
    });
  });
}
