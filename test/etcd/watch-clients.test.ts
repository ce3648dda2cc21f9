/**
 * etcd's clients watching, unchanged, against a single node, a 1-member and a 3-member
 * cluster (every member's address given to the client): Debian's etcdctl 3.4 (`watch`
 * with --rev, --prefix, --prev-kv, and the interactive `watch -i` reading commands from
 * stdin) and the `etcd3` npm client's watch builder (key, prefix, start revision,
 * previous kv, filters, the compacted error). etcdctl tests skip when it is not on PATH,
 * except in CI (test/support/etcd-process.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Etcd3, type IKeyValue, type Watcher } from "etcd3";
import { requireBinary } from "../support/etcd-process.js";
import { ETCD_TARGETS, type EtcdTarget, startEtcdTarget } from "../support/etcd-targets.js";
import { startCtl } from "../support/etcdctl-child.js";
import { waitFor } from "../support/wait-for.js";

for (const kind of ETCD_TARGETS) {
  describe(`watching a ${kind}`, () => {
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

    test("etcdctl watch --rev --prefix --prev-kv, and interactive watch", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      const first = await client.put("cw/a").value("1").exec();
      const rev = Number(first.header.revision);
      await client.put("cw/b").value("2");
      await client.put("cw/a").value("3");
      await client.delete().key("cw/b");
      const history = startCtl(ctl, server.endpoints, [
        "watch",
        "--prefix",
        "cw/",
        "--rev",
        String(rev),
        "--prev-kv",
      ]);
      const live = startCtl(ctl, server.endpoints, ["watch", "-i"]);
      t.after(async () => {
        await history.stop();
        await live.stop();
      });
      live.child.stdin?.write("watch cw/a\n");
      await waitFor(() => history.lines().length >= 11, "etcdctl's history", 10_000);
      assert.deepEqual(
        history.lines(),
        [
          "PUT",
          "cw/a",
          "1",
          "PUT",
          "cw/b",
          "2",
          "PUT",
          "cw/a",
          "1",
          "cw/a",
          "3",
          "DELETE",
          "cw/b",
          "2",
          "cw/b",
          "",
        ].filter((l) => l !== ""),
      );
      // The interactive watcher is registered once its created response came: retry the put.
      await waitFor(
        async () => {
          await client.put("cw/a").value("live");
          return live.lines().includes("live");
        },
        "etcdctl watch -i saw a put",
        10_000,
      );
      assert.deepEqual(live.lines().slice(0, 3), ["PUT", "cw/a", "live"]);
      await waitFor(() => history.lines().includes("live"), "the history watcher goes on live");
    });

    test("etcd3 watch builder: key, prefix, start revision, previous kv, filters", async (t) => {
      const first = await client.put("ew/a").value("1").exec();
      const start = first.header.revision;
      await client.put("ew/a").value("2");
      await client.delete().key("ew/a");
      const seen: string[] = [];
      const record = (w: Watcher, tag: string) => {
        w.on("put", (kv: IKeyValue, prev?: IKeyValue) =>
          seen.push(
            `${tag} put ${kv.key.toString()}=${kv.value.toString()} prev=${prev?.value.toString() ?? "-"}`,
          ),
        );
        w.on("delete", (kv: IKeyValue, prev?: IKeyValue) =>
          seen.push(`${tag} delete ${kv.key.toString()} prev=${prev?.value.toString() ?? "-"}`),
        );
      };
      const history = await client
        .watch()
        .prefix("ew/")
        .startRevision(start)
        .withPreviousKV()
        .create();
      const puts = await client.watch().key("ew/b").only("put").create();
      // A failed wait must not leave the watchers (and the process) running.
      t.after(async () => {
        await history.cancel();
        await puts.cancel();
      });
      record(history, "h");
      record(puts, "p");
      await client.put("ew/b").value("x");
      await client.delete().key("ew/b");
      await waitFor(() => seen.length >= 6, `the events (seen: ${JSON.stringify(seen)})`, 10_000);
      assert.deepEqual(
        seen.filter((l) => l.startsWith("h ")),
        [
          "h put ew/a=1 prev=-",
          "h put ew/a=2 prev=1",
          "h delete ew/a prev=2",
          "h put ew/b=x prev=-",
          "h delete ew/b prev=x",
        ],
      );
      assert.deepEqual(
        seen.filter((l) => l.startsWith("p ")),
        ["p put ew/b=x prev=-"],
      );
    });

    test("etcd3 watch: a start revision below the compacted one is an error", async () => {
      const r = await client.put("ec/a").value("1").exec();
      await client.put("ec/a").value("2");
      const now = await client.put("ec/a").value("3").exec();
      await client.kv.compact({ revision: now.header.revision });
      const w = client.watch().key("ec/a").startRevision(r.header.revision).watcher();
      const error = await new Promise<Error>((resolve) => w.on("error", resolve));
      assert.match(String(error.message), /canceled/);
    });
  });
}
