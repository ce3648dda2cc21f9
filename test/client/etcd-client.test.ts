/**
 * EtcdClient against etcd 3.4 (Debian's etcd-server, a child process) and against
 * kv-engine (`kv-engine serve`, a single node), each case the same on both, under both
 * transports (lean and grpc-js): KV with revisions and metadata, the txn builder, watch
 * (history, prev_kv, compaction, cancel), leases (keep-alives past the TTL, lost, revoke),
 * locks (fencing revisions, a cancelled wait) and elections (campaign, proclaim, resign,
 * observe).
 * The watch's resumption after a member's kill -9 is in etcd-watch-resume.test.ts.
 */
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { EtcdClient, isKvClientError, op, status } from "../../src/client/index.js";
import { CLIENT_TRANSPORTS } from "../support/client-transports.js";
import { onPath, startEtcd } from "../support/etcd-process.js";
import { startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

type TargetKind = "etcd 3.4" | "kv-engine";
const TARGETS: readonly TargetKind[] = ["etcd 3.4", "kv-engine"];

interface Target {
  readonly address: string;
  /** Pauses (SIGSTOP) or resumes (SIGCONT) the server process. */
  pause(paused: boolean): void;
  stop(): Promise<void>;
}

/** The target, or undefined when etcd's binary is absent outside CI (etcd-process.ts's rule). */
async function startTarget(kind: TargetKind): Promise<Target | undefined> {
  if (kind === "etcd 3.4") {
    const binary = onPath("etcd");
    if (binary === undefined) {
      if (process.env["CI"] === "true") throw new Error("etcd is not on PATH in CI");
      return undefined;
    }
    const etcd = await startEtcd(binary);
    return { ...etcd, pause: (paused) => etcd.signal(paused ? "SIGSTOP" : "SIGCONT") };
  }
  const dir = tempDir("kv-etcdclient-");
  const server = await startServer(dir.path, ["--no-sync"]);
  return {
    address: server.address,
    pause: (paused) => server.child.kill(paused ? "SIGSTOP" : "SIGCONT"),
    async stop() {
      server.child.kill("SIGCONT");
      await server.stop("SIGKILL");
      dir.remove();
    },
  };
}

const s = (b: Buffer | undefined) => b?.toString("utf8");

for (const kind of TARGETS) {
  describe(`EtcdClient against ${kind}`, () => {
    let target: Target | undefined;
    before(async () => {
      target = await startTarget(kind);
    });
    after(async () => {
      await target?.stop();
    });

    for (const transport of CLIENT_TRANSPORTS) {
      describe(transport, () => {
        const clients: EtcdClient[] = [];
        after(() => {
          for (const c of clients) c.close();
        });
        /** A client of the target, or undefined when the test was skipped (no etcd). */
        function client(t: TestContext): EtcdClient | undefined {
          if (target === undefined) {
            t.skip("etcd is not on PATH (apt-get install etcd-server)");
            return undefined;
          }
          const c = new EtcdClient(target.address, { transport, timeoutMs: 10_000 });
          clients.push(c);
          return c;
        }
        const p = (k: string) => `${transport}/${k}`;

        test("put, get and range carry revisions and metadata", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const first = await c.put(p("kv/a"), "1");
          const r1 = first.header.revision;
          assert.ok(r1 > 1);
          const second = await c.put(p("kv/a"), "2", { prevKv: true });
          assert.equal(second.header.revision, r1 + 1);
          assert.equal(s(second.prevKv?.value), "1");
          assert.equal(second.prevKv?.modRevision, r1);
          const now = await c.get(p("kv/a"));
          assert.deepEqual(now && { ...now, key: s(now.key), value: s(now.value) }, {
            key: p("kv/a"),
            value: "2",
            createRevision: r1,
            modRevision: r1 + 1,
            version: 2,
            lease: 0n,
          });
          assert.equal(s((await c.get(p("kv/a"), { revision: r1 }))?.value), "1");
          assert.equal(await c.get(p("kv/absent")), undefined);

          await c.put(p("kv/b"), "3");
          await c.put(p("kv/c"), "4");
          const all = await c.range({ prefix: p("kv/") });
          assert.deepEqual(
            all.kvs.map((kv) => s(kv.key)),
            [p("kv/a"), p("kv/b"), p("kv/c")],
          );
          assert.equal(all.count, 3);
          assert.equal(all.more, false);
          assert.equal(all.header.revision, r1 + 3);
          const limited = await c.range(
            { prefix: p("kv/") },
            { limit: 2, sort: { order: "descend" } },
          );
          assert.deepEqual(
            limited.kvs.map((kv) => s(kv.key)),
            [p("kv/c"), p("kv/b")],
          );
          assert.equal(limited.more, true);
          assert.equal(limited.count, 3);
          const keys = await c.range({ prefix: p("kv/") }, { keysOnly: true });
          assert.deepEqual(
            keys.kvs.map((kv) => kv.value.length),
            [0, 0, 0],
          );
          const counted = await c.range({ prefix: p("kv/") }, { countOnly: true });
          assert.deepEqual([counted.kvs.length, counted.count], [0, 3]);
          const byMod = await c.range(
            { from: p("kv/b"), to: p("kv/d") },
            { sort: { target: "mod", order: "descend" } },
          );
          assert.deepEqual(
            byMod.kvs.map((kv) => s(kv.key)),
            [p("kv/c"), p("kv/b")],
          );
          const past = await c.range({ prefix: p("kv/") }, { revision: r1 });
          assert.deepEqual(
            past.kvs.map((kv) => s(kv.value)),
            ["1"],
          );
        });

        test("delete a prefix with prev_kv; errors carry etcd's codes", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          await c.put(p("del/x"), "1");
          await c.put(p("del/y"), "2");
          const d = await c.delete({ prefix: p("del/") }, { prevKv: true });
          assert.equal(d.deleted, 2);
          assert.deepEqual(
            d.prevKvs.map((kv) => s(kv.value)),
            ["1", "2"],
          );
          assert.equal((await c.delete(p("del/x"))).deleted, 0);

          const future = await c
            .get(p("del/x"), { revision: d.header.revision + 1000 })
            .catch((e: unknown) => e);
          assert.ok(isKvClientError(future, status.OUT_OF_RANGE), String(future));
          assert.equal(future.serverCode, "FUTURE_REVISION");
          const leaseless = await c
            .put(p("del/z"), "v", { lease: 0x1234n })
            .catch((e: unknown) => e);
          assert.ok(isKvClientError(leaseless, status.NOT_FOUND), String(leaseless));
          assert.equal(leaseless.serverCode, "NOT_FOUND");
          const ignore = await c
            .put(p("del/absent"), "", { ignoreValue: true })
            .catch((e: unknown) => e);
          assert.ok(isKvClientError(ignore, status.INVALID_ARGUMENT), String(ignore));
          assert.equal(ignore.serverCode, "NOT_FOUND");
          await assert.rejects(c.put("", "v"), TypeError);
        });

        test("compact: reads below fail COMPACTED, the compacted revision stays readable", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const r1 = (await c.put(p("cmp/k"), "1")).header.revision;
          const r2 = (await c.put(p("cmp/k"), "2")).header.revision;
          await c.compact(r2, { physical: true });
          const gone = await c.get(p("cmp/k"), { revision: r1 }).catch((e: unknown) => e);
          assert.ok(isKvClientError(gone, status.OUT_OF_RANGE), String(gone));
          assert.equal(gone.serverCode, "COMPACTED");
          assert.equal(s((await c.get(p("cmp/k"), { revision: r2 }))?.value), "2");
        });

        test("txn: compares choose the branch; each op answers, nested txns too", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const k = p("txn/k");
          const create = () =>
            c.txn().if(k, "mod", "=", 0).success(op.put(k, "v1")).failure(op.get(k)).commit();
          const made = await create();
          assert.equal(made.succeeded, true);
          assert.equal(made.branch, "success");
          assert.equal(made.responses[0]?.type, "put");
          const again = await create();
          assert.equal(again.branch, "failure");
          const got = again.responses[0];
          assert.ok(got?.type === "get");
          assert.equal(s(got.kvs[0]?.value), "v1");
          const rev = got.kvs[0]!.modRevision;
          assert.equal(again.header.revision, made.header.revision); // a read changes nothing

          const nested = await c
            .txn()
            .if(k, "value", "=", "v1")
            .if(k, "version", ">", 0)
            .if(k, "create", "<", rev + 1)
            .if(k, "lease", "=", 0)
            .success(
              op.txn(
                c
                  .txn()
                  .if(k, "value", "!=", "v1")
                  .success(op.delete(k))
                  .failure(op.put(k, "v2", { prevKv: true })),
              ),
              op.get({ prefix: p("txn/") }, { countOnly: true }),
            )
            .commit();
          assert.equal(nested.succeeded, true);
          const inner = nested.responses[0];
          assert.ok(inner?.type === "txn");
          assert.equal(inner.branch, "failure");
          const put = inner.responses[0];
          assert.ok(put?.type === "put");
          assert.equal(s(put.prevKv?.value), "v1");
          const count = nested.responses[1];
          assert.ok(count?.type === "get");
          assert.equal(count.count, 1);
          assert.equal(s((await c.get(k))?.value), "v2");

          const absent = await c
            .txn()
            .if(p("txn/none"), "value", "=", "")
            .success(op.put(k, "no"))
            .commit();
          assert.equal(absent.succeeded, false); // a value compare on an absent key fails
          const dup = await c
            .txn()
            .success(op.put(k, "a"), op.put(k, "b"))
            .commit()
            .catch((e: unknown) => e);
          assert.ok(isKvClientError(dup, status.INVALID_ARGUMENT), String(dup));
          assert.equal(dup.serverCode, "INVALID_ARGUMENT");
          assert.throws(() => c.txn().if(k, "mod", "=", "x"), TypeError);
        });

        test("watch: history from a revision with prev_kv, then live events; the signal ends it", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const w = p("watch/");
          const r1 = (await c.put(`${w}a`, "1")).header.revision;
          await c.put(`${w}a`, "2");
          await c.delete(`${w}a`);
          const ac = new AbortController();
          const seen: string[] = [];
          const done = (async () => {
            for await (const batch of c.watch(
              { prefix: w },
              { startRevision: r1, prevKv: true, signal: ac.signal },
            )) {
              for (const e of batch.events) {
                seen.push(
                  `${e.type} ${s(e.kv.key)} ${s(e.kv.value)} @${e.kv.modRevision} prev ${s(e.prevKv?.value)}`,
                );
              }
            }
          })();
          await waitFor(() => seen.length >= 3, "the history");
          const r4 = (await c.put(`${w}b`, "3")).header.revision;
          await waitFor(() => seen.length >= 4, "a live event");
          ac.abort();
          await done; // ends without an error
          assert.deepEqual(seen, [
            `put ${w}a 1 @${r1} prev undefined`,
            `put ${w}a 2 @${r1 + 1} prev 1`,
            `delete ${w}a  @${r1 + 2} prev 2`,
            `put ${w}b 3 @${r4} prev undefined`,
          ]);
        });

        test("watch from now, left with break; a watch below the compaction fails COMPACTED", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const k = p("watchc/k");
          const r1 = (await c.put(k, "old")).header.revision;
          const it = c.watch(k);
          const first = it.next();
          // The watcher is created before this put is answered?  Not known: write until an event comes.
          let value = 0;
          const writer = setInterval(() => void c.put(k, String(++value)).catch(() => {}), 50);
          const batch = await first;
          clearInterval(writer);
          assert.equal(batch.done, false);
          assert.ok(batch.value!.events[0]!.kv.modRevision > r1, "no event from before the watch");
          await it.return(undefined);

          const r2 = (await c.put(k, "new")).header.revision;
          await c.compact(r2);
          const failed = await (async () => {
            for await (const _ of c.watch(k, { startRevision: r1 })) {
              // nothing is delivered
            }
          })().catch((e: unknown) => e);
          assert.ok(isKvClientError(failed, status.OUT_OF_RANGE), String(failed));
          assert.equal(failed.serverCode, "COMPACTED");
          assert.equal(failed.compactRevision, r2);
        });

        test("lease: kept alive past its TTL, keys attached, revoke deletes them", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const lease = await c.lease(2);
          assert.equal(lease.ttl, 2);
          await c.put(p("lease/k"), "v", { lease });
          assert.equal((await c.get(p("lease/k")))?.lease, lease.id);
          await new Promise((r) => setTimeout(r, 3500)); // past the TTL
          assert.equal(lease.lost.aborted, false);
          assert.ok(lease.renewals >= 3, `renewals: ${lease.renewals}`);
          assert.equal(s((await c.get(p("lease/k")))?.value), "v");
          const ttl = await lease.timeToLive({ keys: true });
          assert.ok(
            ttl.ttl > 0 && ttl.grantedTtl === 2,
            JSON.stringify({ ttl: ttl.ttl, g: ttl.grantedTtl }),
          );
          assert.deepEqual(ttl.keys.map(s), [p("lease/k")]);
          assert.ok((await c.leases()).includes(lease.id));
          await lease.revoke();
          assert.equal(await c.get(p("lease/k")), undefined);
          assert.equal((await c.timeToLive(lease.id)).ttl, -1);
          assert.equal(lease.lost.aborted, false, "a revoke is no loss");
        });

        test("lease: lost fires when the lease is revoked elsewhere", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const lease = await c.lease(3);
          const other = client(t)!;
          await other.revoke(lease.id);
          await waitFor(() => lease.lost.aborted, "lost", 5000);
          const reason: unknown = lease.lost.reason;
          assert.ok(isKvClientError(reason, status.NOT_FOUND), String(reason));
          assert.equal(lease.ended, true);
          const gone = await c.revoke(lease.id).catch((e: unknown) => e);
          assert.ok(isKvClientError(gone, status.NOT_FOUND), String(gone));
        });

        test("lease: lost when no renewal comes before its TTL ran out (server paused)", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const lease = await c.lease(2);
          await waitFor(() => lease.renewals >= 1, "a renewal");
          target!.pause(true);
          try {
            await waitFor(() => lease.lost.aborted, "lost", 5000);
          } finally {
            target!.pause(false);
          }
          const reason: unknown = lease.lost.reason;
          assert.ok(isKvClientError(reason, status.UNAVAILABLE), String(reason));
          assert.equal(reason.serverCode, "UNAVAILABLE");
        });

        test("lock: the fencing revision grows with each holder; a wait is cancelled by its signal", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const name = p("lock/one");
          const a = await c.lock(name, { ttl: 5 });
          const kv = await c.get(a.key);
          assert.equal(a.revision, kv?.createRevision);
          assert.ok(s(a.key)!.startsWith(`${name}/`));
          let bHeld = false;
          const b = c.lock(name, { ttl: 5 }).then((h) => {
            bHeld = true;
            return h;
          });
          const ac = new AbortController();
          const cancelled = c.lock(name, { ttl: 5, signal: ac.signal }).catch((e: unknown) => e);
          await new Promise((r) => setTimeout(r, 300));
          assert.equal(bHeld, false, "a second holder while the first holds");
          ac.abort();
          const e = await cancelled;
          assert.ok(isKvClientError(e), String(e));
          assert.equal(e.serverCode, "ABORTED");
          await a.unlock();
          const held = await b;
          assert.ok(held.revision > a.revision, `${held.revision} > ${a.revision}`);
          await held.unlock();
          assert.equal((await c.range({ prefix: `${name}/` })).count, 0, "no key left behind");
        });

        test("election: campaign, proclaim, resign, observe the leaders in order", async (t) => {
          const c = client(t);
          if (c === undefined) return;
          const name = p("elect/e");
          assert.equal(await c.leader(name), undefined);
          const a = await c.campaign(name, "a1", { ttl: 5 });
          assert.equal(s((await c.leader(name))?.value), "a1");
          const ac = new AbortController();
          const observed: string[] = [];
          const watching = (async () => {
            for await (const kv of c.observe(name, { signal: ac.signal }))
              observed.push(s(kv.value)!);
          })();
          await waitFor(() => observed.length >= 1, "the current leader");
          const b = c.campaign(name, "b1", { ttl: 5 });
          await a.proclaim("a2");
          await waitFor(() => observed.includes("a2"), "a proclaimed value");
          await a.resign();
          const bLeads = await b;
          assert.ok(bLeads.revision > a.revision);
          await waitFor(() => observed.includes("b1"), "the next leader");
          const stale = await a.proclaim("a3").catch((e: unknown) => e);
          assert.ok(isKvClientError(stale), String(stale));
          assert.equal(stale.serverCode, "FAILED_PRECONDITION");
          await bLeads.resign();
          ac.abort();
          await watching;
          assert.deepEqual(observed, ["a1", "a2", "b1"]);
        });
      });
    }
  });
}
