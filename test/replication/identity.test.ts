/**
 * Identity and layout: IDs are deterministic 52-bit hashes; a member refuses a data
 * directory whose identity, kind or membership contradicts its options; each part of the
 * directory is locked; a plain store refuses a member's directory.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { open } from "../../src/db/kv-store.js";
import { isKvError } from "../../src/errors.js";
import {
  clusterIdOf,
  initialMemberId,
  newMemberId,
  parseInitialCluster,
} from "../../src/replication/identity.js";
import { MemoryNetwork } from "../../src/replication/memory-transport.js";
import { ReplicatedStore } from "../../src/replication/replicated-store.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

const INITIAL = "a=127.0.0.1:7001,b=127.0.0.1:7002,c=127.0.0.1:7003";

function member(fs: MemoryFileSystem, extra: Record<string, unknown> = {}) {
  return ReplicatedStore.open({
    dataDir: "/d",
    fs,
    name: "a",
    initialCluster: INITIAL,
    transport: new MemoryNetwork().transport(),
    tickMs: 20,
    ...extra,
  });
}

describe("identity", () => {
  test("IDs are deterministic safe integers; the order of the initial members does not matter", () => {
    const members = parseInitialCluster(INITIAL);
    const shuffled = [members[2]!, members[0]!, members[1]!];
    const id = clusterIdOf("t", members);
    assert.equal(clusterIdOf("t", shuffled), id);
    assert.notEqual(clusterIdOf("u", members), id);
    assert.notEqual(clusterIdOf("t", members.slice(0, 2)), id);
    const ids = members.map((m) => initialMemberId("t", m));
    assert.equal(new Set(ids).size, 3);
    for (const x of [id, ...ids]) assert.ok(Number.isSafeInteger(x) && x > 0 && x < 2 ** 52);
    assert.equal(initialMemberId("t", members[0]!), ids[0]);
    const m = { name: "d", peerAddress: "127.0.0.1:7004" };
    assert.notEqual(newMemberId(m), newMemberId(m), "a member added again gets a new ID");
    assert.equal(newMemberId(m, "n"), newMemberId(m, "n"));
  });

  test("malformed initial clusters are refused", () => {
    for (const bad of ["", "a", "a=host", "a=h:0", "a=h:1,a=h:2", "a=h:1,b=h:1", "a b=h:1"]) {
      assert.throws(
        () => parseInitialCluster(bad),
        (err) => isKvError(err, "INVALID_ARGUMENT"),
        bad,
      );
    }
    assert.deepEqual(parseInitialCluster("x=[::1]:5,y=host.example:65535"), [
      { name: "x", peerAddress: "[::1]:5" },
      { name: "y", peerAddress: "host.example:65535" },
    ]);
    // etcd's URLs, as etcdctl member add prints them.
    assert.deepEqual(parseInitialCluster("x=http://[::1]:5,y=https://h:6"), [
      { name: "x", peerAddress: "[::1]:5" },
      { name: "y", peerAddress: "h:6" },
    ]);
    assert.throws(
      () => parseInitialCluster("x=ftp://h:5"),
      (err) => isKvError(err, "INVALID_ARGUMENT"),
    );
  });

  test("a member refuses a directory whose identity contradicts its options", async () => {
    const fs = new MemoryFileSystem();
    const s = await member(fs);
    const { memberId, clusterId } = s;
    await s.close();
    // The same options open it again, with the same identity.
    const again = await member(fs);
    assert.deepEqual([again.memberId, again.clusterId], [memberId, clusterId]);
    await again.close();
    for (const [extra, why] of [
      [{ initialClusterToken: "other" }, /cluster options describe/],
      [{ initialCluster: `${INITIAL},d=127.0.0.1:7004` }, /cluster options describe/],
      [{ name: "b" }, /started as b/],
      [
        { initialClusterState: "existing", join: { clusterId: 5, memberId: memberId } },
        /cluster options describe/,
      ],
    ] as const) {
      await assert.rejects(
        member(fs, extra),
        (err) => isKvError(err, "FAILED_PRECONDITION") && why.test(String(err)),
        JSON.stringify(extra),
      );
    }
    // The data is untouched by the refusals.
    const last = await member(fs);
    assert.equal(last.memberId, memberId);
    await last.close();
  });

  test("a joining member needs the IDs MemberAdd returned", async () => {
    await assert.rejects(
      member(new MemoryFileSystem(), { initialClusterState: "existing" }),
      (err) => isKvError(err, "INVALID_ARGUMENT") && /MemberAdd/.test(String(err)),
    );
  });

  test("plain stores and member directories refuse each other; each part is locked", async () => {
    const fs = new MemoryFileSystem();
    const plain = await open("/plain", { fs });
    await plain.put("k", "v");
    await plain.close();
    await assert.rejects(
      member(fs, { dataDir: "/plain" }),
      (err) => isKvError(err, "FAILED_PRECONDITION") && /plain/.test(String(err)),
    );
    const s = await member(fs);
    await assert.rejects(member(fs), (err) => isKvError(err, "LOCKED"));
    await assert.rejects(open("/d/raft", { fs }), (err) => isKvError(err));
    await assert.rejects(open(s.storePath, { fs }), (err) => isKvError(err, "LOCKED"));
    await s.close();
    await assert.rejects(
      open("/d", { fs }),
      (err) => isKvError(err, "FAILED_PRECONDITION") && /cluster member/.test(String(err)),
    );
    assert.deepEqual(
      (await fs.list("/d")).filter((n) => n !== "LOCK"),
      ["member.json", "raft", "snap", "store"],
    );
  });
});
