/**
 * EtcdClient.watch across the loss of its member: a 3-member kv-engine cluster
 * (`kv-engine serve` processes), a watch on a prefix on the first member, a writer putting
 * keys through every member; the member the watch is on is killed (SIGKILL) or paused
 * (SIGSTOP: its stream goes silent and does not answer a progress request) mid-stream.
 * The watch must resume on another member from its last revision + 1: every revision of
 * the prefix from the first event to the last write, exactly once and in order (every
 * write is one revision of this prefix, so a gap or a repeat shows), each acknowledged
 * write with its key and value. And a lease kept alive across its member's kill (its
 * keep-alive stream moves to another member before the TTL runs out). The default run
 * pairs each transport with one signal (lean: SIGKILL, grpc-js: SIGSTOP) and keeps the lease
 * case on lean; KV_STRESS=1 runs every pair and the lease case under both transports.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { EtcdClient, type WatchEvent } from "../../src/client/index.js";
import { CLIENT_TRANSPORTS } from "../support/client-transports.js";
import { ProcessCluster } from "../support/cluster-processes.js";
import { waitFor } from "../support/wait-for.js";

const STRESS = process.env["KV_STRESS"] === "1";

describe("EtcdClient on a 3-member kv-engine cluster: a member killed or paused", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  const signals = ["SIGKILL", "SIGSTOP"] as const;
  const pairs = STRESS
    ? CLIENT_TRANSPORTS.flatMap((t) => signals.map((sig) => [t, sig] as const))
    : CLIENT_TRANSPORTS.map((t, i) => [t, signals[i % signals.length] ?? "SIGKILL"] as const);
  for (const [transport, signal] of pairs) {
    test(`${transport}: the watch's member gets ${signal}`, async () => {
      const cluster = await ProcessCluster.start(["n1", "n2", "n3"]);
      cleanups.push(() => cluster.stop());
      const addresses = ["n1", "n2", "n3"].map((n) => cluster.member(n).clientAddress);
      const watcher = new EtcdClient(addresses, { transport, timeoutMs: 5000 });
      const writer = new EtcdClient([...addresses].reverse(), { transport, timeoutMs: 5000 });
      cleanups.push(() => watcher.close());
      cleanups.push(() => writer.close());
      const prefix = `resume-${transport}-${signal}/`;

      // Every acknowledged write: revision -> value.
      const acked = new Map<number, string>();
      let i = 0;
      const writeOne = async () => {
        const value = String(++i);
        try {
          const r = await writer.put(`${prefix}${value}`, value);
          acked.set(r.header.revision, value);
        } catch {
          // Outcome unknown (the member died under it): its revision may appear or not.
        }
      };
      const first = (await writer.put(`${prefix}0`, "0")).header.revision;
      acked.set(first, "0");

      const ac = new AbortController();
      const events: WatchEvent[] = [];
      const watching = (async () => {
        for await (const b of watcher.watch(
          { prefix },
          { startRevision: first, signal: ac.signal, checkAfterMs: 1000 },
        )) {
          events.push(...b.events);
        }
      })();
      for (let n = 0; n < 20; n++) await writeOne();
      await waitFor(() => events.length >= 21, "the first events");
      const on = watcher.calls.current;
      assert.equal(on, addresses[0]);
      if (signal === "SIGKILL") await cluster.signal("n1", signal);
      else cluster.member("n1").child?.kill(signal); // paused: the watch finds its stream silent
      for (let n = 0; n < 30; n++) await writeOne();
      const last = Math.max(...acked.keys());
      await waitFor(
        () => events.some((e) => e.kv.modRevision >= last),
        "the events after the kill or pause",
        20_000,
      );
      ac.abort();
      await watching;

      assert.notEqual(watcher.calls.current, on, "the watch moved to another member");
      const revisions = events.map((e) => e.kv.modRevision);
      for (let k = 1; k < revisions.length; k++) {
        assert.equal(
          revisions[k],
          revisions[k - 1]! + 1,
          `revision after ${revisions[k - 1]}: ${revisions.join(",")}`,
        );
      }
      assert.equal(revisions[0], first);
      const byRevision = new Map(events.map((e) => [e.kv.modRevision, e]));
      for (const [rev, value] of acked) {
        const e = byRevision.get(rev);
        assert.ok(e !== undefined, `acknowledged write at ${rev} missing`);
        assert.equal(e.kv.key.toString(), `${prefix}${value}`);
        assert.equal(e.kv.value.toString(), value);
        assert.equal(e.type, "put");
      }
    });
  }

  for (const transport of STRESS ? CLIENT_TRANSPORTS : CLIENT_TRANSPORTS.slice(0, 1)) {
    test(`${transport}: a lease is kept alive across its member's kill -9`, async () => {
      const cluster = await ProcessCluster.start(["n1", "n2", "n3"]);
      cleanups.push(() => cluster.stop());
      const addresses = ["n1", "n2", "n3"].map((n) => cluster.member(n).clientAddress);
      const c = new EtcdClient(addresses, { transport, timeoutMs: 5000 });
      cleanups.push(() => c.close());
      const lease = await c.lease(3);
      await c.put(`lease-${transport}/k`, "v", { lease });
      await waitFor(() => lease.renewals >= 1, "a renewal on n1");
      assert.equal(c.calls.current, addresses[0]);
      await cluster.signal("n1", "SIGKILL");
      const renewed = lease.renewals;
      // Twice the TTL: without keep-alives on another member it would be lost meanwhile.
      await new Promise((r) => setTimeout(r, 6000));
      assert.equal(lease.lost.aborted, false, String(lease.lost.reason));
      assert.ok(lease.renewals > renewed + 2, `renewals ${renewed} -> ${lease.renewals}`);
      assert.notEqual(c.calls.current, addresses[0]);
      assert.equal((await c.get(`lease-${transport}/k`))?.value.toString(), "v");
      await lease.revoke();
      assert.equal(await c.get(`lease-${transport}/k`), undefined);
    });
  }
});
