/**
 * The `etcd3` npm client (microsoft/etcd3 1.1.2, a devDependency), unchanged, against
 * kv-engine's etcd KV service: get/getAll (prefix, limit, revision, sort, keys, count),
 * put with the previous value, delete, if/then/else transactions, error classes chosen by
 * etcd's message text, and the Kubernetes storage pattern (create on mod_revision 0,
 * update on the mod revision read, list in pages at one revision with the continue key
 * "last key + \0"); leases (client.lease(ttl) with its automatic keep-alives, lease.put,
 * ttl, revoke, and `lost` once the lease is revoked behind its back); its lock and election
 * recipes with two contenders (over KV, Watch and Lease), the member list, Status and the
 * alarm list.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Etcd3, EtcdError, EtcdLockFailedError, GRPCOutOfRangeError, Range } from "etcd3";
import { ETCD_TARGETS, type EtcdTarget, startEtcdTarget } from "../support/etcd-targets.js";
import { waitFor } from "../support/wait-for.js";

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

for (const kind of ETCD_TARGETS) {
  describe(`against a ${kind}`, () => {
    let server: EtcdTarget;
    let client: Etcd3;
    before(async () => {
      server = await startEtcdTarget(kind);
      client = new Etcd3({ hosts: server.endpoints.map((a) => `http://${a}`) });
    });
    after(async () => {
      client.close();
      await server.stop();
    });

    test("etcd3: put, get, getAll with prefix, limit, sort, keys, count, revision", async () => {
      await client.put("e3/a").value("1");
      await client.put("e3/b").value("2");
      const put = await client.put("e3/c").value("3").exec();
      const afterC = Number(put.header.revision);
      await client.put("e3/a").value("4");
      assert.equal(await client.get("e3/a").string(), "4");
      assert.equal(await client.get("e3/none").string(), null);
      assert.deepEqual(await client.getAll().prefix("e3/").strings(), {
        "e3/a": "4",
        "e3/b": "2",
        "e3/c": "3",
      });
      assert.deepEqual(await client.getAll().prefix("e3/").limit(2).keys(), ["e3/a", "e3/b"]);
      assert.deepEqual(await client.getAll().prefix("e3/").sort("Mod", "Descend").keys(), [
        "e3/a",
        "e3/c",
        "e3/b",
      ]);
      assert.deepEqual(await client.getAll().prefix("e3/").sort("Value", "Ascend").keys(), [
        "e3/b",
        "e3/c",
        "e3/a",
      ]);
      assert.equal(await client.getAll().prefix("e3/").count(), 3);
      assert.equal(await client.get("e3/a").revision(afterC).string(), "1");
      const raw = await client.getAll().prefix("e3/").limit(1).exec();
      assert.equal(raw.more, true);
      assert.equal(raw.count, "3");
      assert.equal(raw.kvs[0]?.version, "2");
    });

    test("etcd3: put with the previous value, delete with the previous values", async () => {
      await client.put("e3p/k").value("old");
      const prev = await client.put("e3p/k").value("new").getPrevious();
      assert.equal(prev.value.toString(), "old");
      await client.put("e3p/l").value("x");
      const gone = await client.delete().prefix("e3p/").getPrevious();
      assert.deepEqual(
        gone.map((kv) => `${kv.key}=${kv.value}`),
        ["e3p/k=new", "e3p/l=x"],
      );
      const none = await client.delete().key("e3p/k").exec();
      assert.equal(none.deleted, "0");
    });

    test("etcd3: if(...).then(...).else(...).commit(), both branches", async () => {
      await client.put("e3t/k").value("v1");
      const ok = await client
        .if("e3t/k", "Value", "==", "v1")
        .then(client.put("e3t/k").value("v2"))
        .else(client.put("e3t/else").value("no"))
        .commit();
      assert.equal(ok.succeeded, true);
      const no = await client
        .if("e3t/k", "Version", ">", 5)
        .then(client.put("e3t/k").value("v3"))
        .else(client.get("e3t/k"))
        .commit();
      assert.equal(no.succeeded, false);
      const got = no.responses[0]?.response_range;
      assert.equal(got?.kvs[0]?.value.toString(), "v2");
      assert.equal(await client.get("e3t/else").string(), null);
    });

    test("etcd3: etcd's errors reach the client by class and text", async () => {
      await client.put("e3e/k").value("1");
      const rev = Number((await client.put("e3e/k").value("2").exec()).header.revision);
      await client.put("e3e/k").value("3");
      await assert.rejects(
        client
          .get("e3e/k")
          .revision(rev + 100)
          .string(),
        (err: Error) => {
          assert.ok(err instanceof GRPCOutOfRangeError || err instanceof EtcdError, String(err));
          assert.match(err.message, /etcdserver: mvcc: required revision is a future revision/);
          return true;
        },
      );
      await assert.rejects(
        client
          .if("e3e/k", "Mod", ">", 0)
          .then(client.put("e3e/k").value("a"), client.put("e3e/k").value("b"))
          .commit(),
        /etcdserver: duplicate key given in txn request/,
      );
      await assert.rejects(
        client.put("e3e/k").value("x").lease(12345).exec(),
        /etcdserver: requested lease not found/,
      );
    });

    test("etcd3: the Kubernetes pattern: create on mod 0, update on the mod read, pages at a revision", async () => {
      const prefix = "/registry/pods/";
      const key = (i: number) => `${prefix}${String(i).padStart(3, "0")}`;
      // Create: succeeds once; a second create finds the key.
      for (let i = 0; i < 25; i++) {
        const created = await client
          .if(key(i), "Mod", "==", 0)
          .then(client.put(key(i)).value(`pod-${i}`))
          .commit();
        assert.equal(created.succeeded, true);
      }
      /** Kubernetes' write: put `value` iff the key's mod revision is `mod`, else read the key. */
      const writeIf = (k: string, mod: number | string, value: string) =>
        client
          .if(k, "Mod", "==", mod)
          .then(client.put(k).value(value))
          .else(client.get(k))
          .commit();
      const again = await writeIf(key(0), 0, "dup");
      assert.equal(again.succeeded, false);
      const current = again.responses[0]?.response_range?.kvs[0];
      assert.equal(current?.value.toString(), "pod-0");
      // Update by the mod revision read (resourceVersion); a stale one fails and reads the key.
      const rv = current!.mod_revision;
      assert.equal((await writeIf(key(0), rv, "pod-0b")).succeeded, true);
      const stale = await writeIf(key(0), rv, "lost");
      assert.equal(stale.succeeded, false);
      assert.equal(stale.responses[0]?.response_range?.kvs[0]?.value.toString(), "pod-0b");

      // List in pages of 10 at the revision of the first page, while writes go on.
      const end = `${prefix.slice(0, -1)}0`;
      const first = await client.getAll().inRange(new Range(prefix, end)).limit(10).exec();
      const atRev = first.header.revision;
      await client.put(key(5)).value("changed-after-list-began");
      await client.put(key(99)).value("created-after-list-began");
      const seen = first.kvs.map((kv) => kv.key.toString());
      let page = first;
      while (page.more) {
        const last = page.kvs[page.kvs.length - 1]!.key.toString();
        page = await client
          .getAll()
          .inRange(new Range(`${last}\0`, end))
          .limit(10)
          .revision(atRev)
          .exec();
        seen.push(...page.kvs.map((kv) => kv.key.toString()));
        assert.equal(page.count, String(25 - seen.length + page.kvs.length));
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 25 }, (_, i) => key(i)),
      );
      const five = await client.get(key(5)).revision(atRev).string();
      assert.equal(five, "pod-5");
      assert.equal(await client.getAll().prefix(prefix).count(), 26);
    });

    test("etcd3: a lease kept alive outlives its TTL, is revoked with its keys, reports `lost`", async () => {
      const lease = client.lease(2);
      const id = await lease.grant();
      await lease.put("e3l/a").value("1");
      await lease.put("e3l/b").value("2");
      await new Promise((resolve) => setTimeout(resolve, 3500));
      assert.deepEqual(await client.getAll().prefix("e3l/").keys(), ["e3l/a", "e3l/b"]);
      const ttl = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
      assert.equal(ttl.grantedTTL, "2");
      assert.ok(Number(ttl.TTL) >= 0 && Number(ttl.TTL) <= 2, ttl.TTL);
      assert.deepEqual(
        ttl.keys.map((k) => Buffer.from(k).toString()),
        ["e3l/a", "e3l/b"],
      );
      const other = client.lease(2);
      const otherId = await other.grant();
      await other.put("e3l/c").value("3");
      const lost = new Promise<Error>((resolve) => other.on("lost", resolve));
      // Revoked behind the client's back: its next keep-alive answers TTL 0.
      const revoker = new Etcd3({ hosts: server.endpoints.map((a) => `http://${a}`) });
      try {
        const leases = await revoker.leaseClient.leaseLeases({});
        assert.ok(leases.leases.some((l) => l.ID === otherId));
        await revoker.leaseClient.leaseRevoke({ ID: otherId });
      } finally {
        revoker.close();
      }
      assert.ok((await lost) instanceof Error);
      assert.equal(await client.get("e3l/c").string(), null);
      await lease.revoke();
      assert.deepEqual(await client.getAll().prefix("e3l/").keys(), []);
      assert.notEqual(id, otherId);
    });

    test("etcd3: a lock with two contenders: the second fails while the first holds it, then acquires", async () => {
      // etcd3's Lock is a try-lock: a Txn putting the key iff it does not exist, on a lease.
      const first = client.lock("e3lock/job").ttl(10);
      await first.acquire();
      const second = client.lock("e3lock/job").ttl(10);
      await assert.rejects(second.acquire(), EtcdLockFailedError);
      await first.release();
      await second.acquire();
      assert.deepEqual(await client.getAll().prefix("e3lock/job").keys(), ["e3lock/job"]);
      // The lock key's lease is the holder's: revoking it (the holder gone) frees the lock.
      const lease = await second.leaseId();
      assert.notEqual(lease, null);
      await client.leaseClient.leaseRevoke({ ID: lease! });
      assert.deepEqual(await client.getAll().prefix("e3lock/job").keys(), []);
      await first.acquire();
      await first.release();
    });

    test("etcd3: an election with two candidates: leader, observer, proclaim, resign", async () => {
      const election = client.election("e3elect", 10);
      const one = await election.campaign("one").wait();
      assert.equal(await election.leader(), "one");
      const observer = await election.observe();
      const seen: (string | undefined)[] = [];
      observer.on("change", (v) => seen.push(v));
      let twoElected = false;
      const two = election.campaign("two");
      two.on("elected", () => {
        twoElected = true;
      });
      await sleep(500);
      assert.equal(twoElected, false, "a second candidate was elected while the first led");
      await one.proclaim("one again");
      await waitFor(() => seen.includes("one again"), "the observer saw the proclamation");
      await one.resign();
      await two.wait();
      assert.equal(await election.leader(), "two");
      await waitFor(() => seen.includes("two"), "the observer saw the new leader");
      await two.resign();
      await observer.cancel();
    });

    test("etcd3: cluster member list; maintenance status and alarms", async () => {
      const members = await client.cluster.memberList({});
      assert.equal(members.members.length, kind === "3-member cluster" ? 3 : 1);
      for (const m of members.members) {
        for (const u of m.clientURLs) assert.match(u, /^https?:\/\/127\.0\.0\.1:\d+$/);
      }
      const status = await client.maintenance.status();
      assert.equal(status.version, "3.4.0");
      assert.ok(Number(status.dbSize) > 0, status.dbSize);
      const revision = Number(status.header.revision);
      assert.ok(revision > 0);
      // (etcd3 1.1.2's hashKV fails "client[method] is not a function" against etcd 3.4 too.)
      const alarms = await client.maintenance.alarm({
        action: "Get",
        memberID: "0",
        alarm: "None",
      });
      assert.deepEqual(alarms.alarms, []);
    });
  });
}
