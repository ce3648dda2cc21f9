/**
 * etcd's Cluster, Maintenance and Auth services over gRPC (grpc-js, etcd's messages):
 * a single node (MemberList of itself, changes refused, Status, HashKV, Defragment,
 * Snapshot, MoveLeader, alarms and the space quota) and a 3-member in-process cluster
 * (members added as learners that wait for MemberPromote, promoted, updated, removed with
 * etcd's errors; MoveLeader; HashKV equal on every member after a workload; alarms
 * replicated; the quota through a follower).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ClusterNode } from "../../src/cluster/cluster-node.js";
import { KvStore } from "../../src/db/kv-store.js";
import { AlarmSet } from "../../src/etcd/alarms.js";
import { registerEtcdKv } from "../../src/etcd/kv-service.js";
import { registerEtcdLease } from "../../src/etcd/lease-service.js";
import { LocalEtcdBackend } from "../../src/etcd/local-backend.js";
import { LocalEtcdMaintenance } from "../../src/etcd/local-maintenance.js";
import {
  AUTH_UNIMPLEMENTED,
  ETCD_API_VERSION,
  registerEtcdMaintenanceServices,
  storeBytes,
} from "../../src/etcd/maintenance-service.js";
import { QuotaGuardedBackend, QuotaGuardedLease } from "../../src/etcd/quota.js";
import { unpackSnapshot } from "../../src/etcd/snapshot-archive.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import {
  AlarmRequest_AlarmAction,
  AlarmType,
  AuthStatusRequestSchema,
  AuthStatusResponseSchema,
  type SnapshotResponse,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { KvServer } from "../../src/server/index.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
import { freePort } from "../support/cluster-processes.js";
import { EtcdGrpcClient, isServiceError } from "../support/etcd-grpc-client.js";
import { EtcdMaintenanceClient } from "../support/etcd-maintenance-client.js";
import { type EtcdTestCluster, startEtcdTestCluster } from "../support/etcd-test-cluster.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

const enc = (s: string) => Buffer.from(s);
const ALL = Uint8Array.of(0);

/** Asserts `p` fails with gRPC `code` and exactly `message`. */
async function rejectsWith(p: Promise<unknown>, code: number, message: string): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isServiceError(err), String(err));
    assert.equal(err.details, message);
    assert.equal(err.code, code);
    return true;
  });
}

const FAILED_PRECONDITION = 9;
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;
const OUT_OF_RANGE = 11;
const RESOURCE_EXHAUSTED = 8;
const UNIMPLEMENTED = 12;
const NO_SPACE = "etcdserver: mvcc: database space exceeded";

/** The store a Snapshot stream carries, restored into a real directory and opened. */
async function restoredKeys(messages: SnapshotResponse[]): Promise<string[]> {
  const dir = tempDir("kv-snap-");
  try {
    const file = join(dir.path, "snap.db");
    writeFileSync(file, Buffer.concat(messages.map((m) => m.blob)));
    await unpackSnapshot(file, join(dir.path, "restored"));
    const kv = await KvStore.open(join(dir.path, "restored"), { fs: new RealFileSystem() });
    const mvcc = await MvccStore.open(kv);
    try {
      const view = mvcc.read();
      const r = await view.range(ALL, ALL);
      view.release();
      return r.kvs.map((x) => Buffer.from(x.key).toString());
    } finally {
      await mvcc.close();
      await kv.close();
    }
  } finally {
    dir.remove();
  }
}

/** Checks a Snapshot stream's remaining_bytes count down to 0 and the size etcdctl checks. */
function checkStream(messages: SnapshotResponse[]): void {
  assert.ok(messages.length > 0);
  let total = 0;
  for (const m of messages) total += m.blob.length;
  let left = total;
  for (const m of messages) {
    left -= m.blob.length;
    assert.equal(m.remainingBytes, BigInt(left));
  }
  assert.equal(total % 512, 32, "etcdctl 3.4 wants size % 512 == 32");
}

interface SingleNode {
  address: string;
  mvcc: MvccStore;
  stop(): Promise<void>;
}

async function startSingleNode(quotaBytes?: number): Promise<SingleNode> {
  const fs = new MemoryFileSystem();
  const kv = await KvStore.open("/db", { fs });
  const mvcc = await MvccStore.open(kv);
  const alarms = new AlarmSet();
  const local = new LocalEtcdBackend(mvcc);
  const backend = new QuotaGuardedBackend(local, {
    ...(quotaBytes === undefined ? {} : { quotaBytes }),
    size: () => storeBytes(kv),
    alarms,
    memberId: () => 0n,
  });
  let server: KvServer | undefined;
  const maintenance = new LocalEtcdMaintenance({
    clientAddress: () => server?.address ?? "",
    admin: kv,
    fs,
    mvcc: () => mvcc,
    alarms,
  });
  server = await KvServer.start(kv, {
    port: 0,
    registerServices: (s) => {
      registerEtcdKv(s, backend);
      registerEtcdLease(s, new QuotaGuardedLease(local, backend));
      registerEtcdMaintenanceServices(s, maintenance);
    },
  });
  const started = server;
  return {
    address: started.address,
    mvcc,
    async stop() {
      await started.shutdown(0);
      await mvcc.close();
      await kv.close();
    },
  };
}

describe("a single node", () => {
  let node: SingleNode;
  let m: EtcdMaintenanceClient;
  let kv: EtcdGrpcClient;
  before(async () => {
    node = await startSingleNode();
    m = new EtcdMaintenanceClient(node.address);
    kv = new EtcdGrpcClient(node.address);
  });
  after(async () => {
    m.close();
    kv.close();
    await node.stop();
  });

  test("MemberList answers the node itself; changes are refused", async () => {
    const r = await m.memberList();
    assert.equal(r.members.length, 1);
    const me = r.members[0]!;
    assert.equal(me.name, "default");
    assert.deepEqual(me.clientURLs, [`http://${node.address}`]);
    assert.deepEqual(me.peerURLs, []);
    assert.equal(me.isLearner, false);
    for (const p of [
      m.memberAdd({ peerURLs: ["http://127.0.0.1:1"] }),
      m.memberRemove({ ID: 1n }),
      m.memberUpdate({ ID: 0n, peerURLs: ["http://127.0.0.1:1"] }),
      m.memberPromote({ ID: 0n }),
    ]) {
      await assert.rejects(p, (err) => isServiceError(err) && err.code === FAILED_PRECONDITION);
    }
  });

  test("Status: version, size, the node as its own leader, no alarm", async () => {
    await kv.put({ key: enc("s"), value: enc("v") });
    const s = await m.status();
    assert.equal(s.version, ETCD_API_VERSION);
    assert.ok(s.dbSize > 0n);
    assert.equal(s.dbSizeInUse, s.dbSize);
    assert.equal(s.leader, s.header?.memberId);
    assert.equal(s.isLearner, false);
    assert.deepEqual(s.errors, []);
    assert.equal(s.header?.revision, BigInt(node.mvcc.revision));
  });

  test("HashKV: changes with the data, stable at a past revision, errors past the ends", async () => {
    const a = await m.hashKv();
    const rev = a.header!.revision;
    assert.equal((await m.hashKv(rev)).hash, a.hash);
    await kv.put({ key: enc("h"), value: enc("1") });
    const b = await m.hashKv();
    assert.notEqual(b.hash, a.hash);
    assert.equal((await m.hashKv(rev)).hash, a.hash, "a past revision hashes the same");
    await rejectsWith(
      m.hashKv(b.header!.revision + 5n),
      OUT_OF_RANGE,
      "etcdserver: mvcc: required revision is a future revision",
    );
    await kv.compact({ revision: b.header!.revision, physical: true });
    const c = await m.hashKv();
    assert.equal(c.compactRevision, b.header!.revision);
    await rejectsWith(
      m.hashKv(rev),
      OUT_OF_RANGE,
      "etcdserver: mvcc: required revision has been compacted",
    );
  });

  test("Defragment, MoveLeader, Alarm GET, Auth", async () => {
    await m.defragment();
    await m.moveLeader(0n);
    await rejectsWith(m.moveLeader(7n), FAILED_PRECONDITION, "etcdserver: bad leader transferee");
    assert.deepEqual((await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms, []);
    await rejectsWith(
      m.call(
        "etcdserverpb.Auth",
        "AuthStatus",
        AuthStatusRequestSchema,
        AuthStatusResponseSchema,
        {},
      ),
      UNIMPLEMENTED,
      AUTH_UNIMPLEMENTED,
    );
    assert.match(AUTH_UNIMPLEMENTED, /--auth-token-file/);
  });

  test("Snapshot streams a store that opens with the keys", async () => {
    await kv.put({ key: enc("snap/1"), value: enc("x") });
    const messages = await m.snapshot();
    checkStream(messages);
    const keys = await restoredKeys(messages);
    assert.ok(keys.includes("snap/1"), keys.join(","));
    assert.ok(keys.includes("s"));
  });
});

describe("the space quota on a single node", () => {
  test("puts refused with etcd's error past the quota; reads and deletes served; disarm after freeing space", async () => {
    const node = await startSingleNode(64 * 1024);
    const m = new EtcdMaintenanceClient(node.address);
    const kv = new EtcdGrpcClient(node.address);
    try {
      const granted = await kv.leaseGrant({ TTL: 60n });
      const value = Buffer.alloc(8 * 1024, 120);
      let refused = -1;
      for (let i = 0; i < 100 && refused < 0; i++) {
        try {
          await kv.put({ key: enc(`q/${i}`), value });
        } catch (err) {
          assert.ok(isServiceError(err));
          assert.equal(err.code, RESOURCE_EXHAUSTED);
          assert.equal(err.details, NO_SPACE);
          refused = i;
        }
      }
      assert.ok(refused > 0, "the quota was never reached");
      const alarms = (await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms;
      assert.deepEqual(
        alarms.map((a) => [a.memberID, a.alarm]),
        [[0n, AlarmType.NOSPACE]],
      );
      assert.deepEqual((await m.status()).errors, ["alarm:NOSPACE "]);
      // Refused while the alarm stands, even a small put; a txn that puts too.
      await rejectsWith(
        kv.put({ key: enc("small"), value: enc("1") }),
        RESOURCE_EXHAUSTED,
        NO_SPACE,
      );
      await rejectsWith(
        kv.txn({
          success: [{ request: { case: "requestPut", value: { key: enc("t"), value: enc("1") } } }],
        }),
        RESOURCE_EXHAUSTED,
        NO_SPACE,
      );
      // A lease grant too (etcd's capped applier); a revoke is served.
      await rejectsWith(kv.leaseGrant({ TTL: 10n }), RESOURCE_EXHAUSTED, NO_SPACE);
      await kv.leaseRevoke({ ID: granted.ID });
      // Reads are served.
      assert.equal((await kv.range({ key: enc("q/0") })).kvs.length, 1);
      // Free the space: delete, compact, defragment; then disarm.
      const del = await kv.deleteRange({ key: enc("q/"), rangeEnd: enc("q0") });
      assert.equal(del.deleted, BigInt(refused));
      await kv.compact({ revision: del.header!.revision, physical: true });
      await m.defragment();
      assert.ok((await m.status()).dbSize < 64n * 1024n);
      await rejectsWith(
        kv.put({ key: enc("small"), value: enc("1") }),
        RESOURCE_EXHAUSTED,
        NO_SPACE,
      );
      const cleared = await m.alarm({
        action: AlarmRequest_AlarmAction.DEACTIVATE,
        memberID: 0n,
        alarm: AlarmType.NOSPACE,
      });
      assert.equal(cleared.alarms.length, 1);
      await kv.put({ key: enc("small"), value: enc("1") });
      assert.ok((await kv.leaseGrant({ TTL: 10n })).ID > 0n);
      assert.deepEqual((await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms, []);
    } finally {
      m.close();
      kv.close();
      await node.stop();
    }
  });
});

describe("a 3-member cluster", () => {
  let c: EtcdTestCluster;
  const clients = new Map<string, EtcdMaintenanceClient>();
  const client = (address: string) => {
    let x = clients.get(address);
    if (x === undefined) {
      x = new EtcdMaintenanceClient(address);
      clients.set(address, x);
    }
    return x;
  };
  before(async () => {
    c = await startEtcdTestCluster(3);
  });
  after(async () => {
    for (const x of clients.values()) x.close();
    await c.stop();
  });

  const idOf = (address: string) => BigInt(c.nodes[c.addresses.indexOf(address)]!.store.memberId);

  test("MemberList: IDs, names, http:// peer and client URLs, on every member", async () => {
    // Members publish their client addresses once they know a leader.
    await waitFor(async () => {
      for (const a of c.addresses) {
        const list = await client(a).memberList();
        if (list.members.some((x) => x.clientURLs.length === 0)) return false;
      }
      return true;
    }, "every member's client address published");
    for (const address of c.addresses) {
      const r = await client(address).memberList();
      assert.equal(r.members.length, 3);
      assert.equal(r.header?.memberId, idOf(address));
      for (const n of c.nodes) {
        const mm = r.members.find((x) => x.ID === BigInt(n.store.memberId));
        assert.ok(mm !== undefined);
        assert.equal(mm.name, n.store.name);
        assert.deepEqual(mm.peerURLs, [`http://${n.peerAddress}`]);
        assert.deepEqual(mm.clientURLs, [`http://${n.clientAddress}`]);
        assert.equal(mm.isLearner, false);
      }
    }
  });

  test("membership errors are etcd's", async () => {
    const m = client(c.leaderAddress());
    await rejectsWith(m.memberRemove({ ID: 12345n }), NOT_FOUND, "etcdserver: member not found");
    await rejectsWith(
      m.memberPromote({ ID: idOf(c.followerAddress()) }),
      FAILED_PRECONDITION,
      "etcdserver: can only promote a learner member",
    );
    await rejectsWith(
      m.memberAdd({ peerURLs: [`http://${c.nodes[0]!.peerAddress}`] }),
      FAILED_PRECONDITION,
      "etcdserver: Peer URLs already exists",
    );
    for (const urls of [["127.0.0.1:1"], ["ftp://127.0.0.1:1"], ["http://a:1", "http://b:2"], []]) {
      await rejectsWith(
        m.memberAdd({ peerURLs: urls }),
        INVALID_ARGUMENT,
        "etcdserver: given member URLs are invalid",
      );
    }
  });

  test("a learner added with is_learner waits for MemberPromote; update and remove", async () => {
    const leader = client(c.leaderAddress());
    const port = await freePort();
    const peerUrl = `http://127.0.0.1:${port}`;
    const added = await leader.memberAdd({ peerURLs: [peerUrl], isLearner: true });
    const id = added.member!.ID;
    assert.equal(added.member!.isLearner, true);
    assert.equal(added.member!.name, "");
    assert.deepEqual(added.member!.peerURLs, [peerUrl]);
    assert.equal(added.members.length, 4);
    await rejectsWith(
      leader.memberAdd({ peerURLs: [`http://127.0.0.1:${port + 1}`], isLearner: true }),
      FAILED_PRECONDITION,
      "etcdserver: too many learner members in cluster",
    );
    // Not started: not in sync with the leader.
    await rejectsWith(
      leader.memberPromote({ ID: id }),
      FAILED_PRECONDITION,
      "etcdserver: can only promote a learner member which is in sync with leader",
    );
    // Start it: it catches up and stays a learner until promoted.
    const names = c.nodes.map((n) => `${n.store.name}=${n.peerAddress}`);
    const fourth = await ClusterNode.start({
      dataDir: "/n4",
      fs: new MemoryFileSystem(),
      name: "n4",
      initialCluster: [...names, `n4=127.0.0.1:${port}`].join(","),
      initialClusterState: "existing",
      server: { host: "127.0.0.1", port: await freePort() },
      tickMs: 20,
      electionTicks: 10,
    });
    try {
      await waitFor(async () => {
        const r = await leader.memberList();
        return r.members.find((x) => x.ID === id)?.name === "n4";
      }, "n4 published its name");
      const leaderNode = c.nodes[c.addresses.indexOf(c.leaderAddress())]!;
      await waitFor(
        () => fourth.store.status().applied >= leaderNode.store.status().commit,
        "n4 caught up",
      );
      // The leader would have promoted an ordinary learner by now (promoteLagEntries).
      await new Promise((r) => setTimeout(r, 500));
      const r = await leader.memberList();
      assert.equal(r.members.find((x) => x.ID === id)?.isLearner, true, "still a learner");
      const promoted = await leader.memberPromote({ ID: id });
      assert.equal(promoted.members.find((x) => x.ID === id)?.isLearner, false);
      // MemberUpdate moves its peer URL (on every member).
      const moved = `http://127.0.0.1:${await freePort()}`;
      await leader.memberUpdate({ ID: id, peerURLs: [moved] });
      await waitFor(async () => {
        for (const a of c.addresses) {
          const list = await client(a).memberList();
          if (list.members.find((x) => x.ID === id)?.peerURLs[0] !== moved) return false;
        }
        return true;
      }, "the update applied everywhere");
      const removed = await client(c.followerAddress()).memberRemove({ ID: id });
      assert.equal(removed.members.length, 3);
      assert.ok(!removed.members.some((x) => x.ID === id));
    } finally {
      await fourth.stop(0);
    }
  });

  test("MoveLeader: etcd's 'not leader' from a follower; the leader hands over", async () => {
    const follower = c.followerAddress();
    await rejectsWith(
      client(follower).moveLeader(idOf(c.leaderAddress())),
      FAILED_PRECONDITION,
      "etcdserver: not leader",
    );
    await rejectsWith(
      client(c.leaderAddress()).moveLeader(999n),
      FAILED_PRECONDITION,
      "etcdserver: bad leader transferee",
    );
    await client(c.leaderAddress()).moveLeader(idOf(follower));
    assert.equal(c.leaderAddress(), follower);
    const s = await client(follower).status();
    assert.equal(s.leader, idOf(follower));
    assert.equal(s.version, ETCD_API_VERSION);
    assert.ok(s.raftIndex > 0n && s.raftTerm > 0n && s.raftAppliedIndex > 0n);
  });

  test("HashKV is equal on every member at the same revision after a workload", async () => {
    for (let i = 0; i < 60; i++) {
      const kv = new EtcdGrpcClient(c.addresses[i % 3]!);
      try {
        if (i % 7 === 3) await kv.deleteRange({ key: enc(`w/${i - 2}`) });
        else if (i % 11 === 5) {
          await kv.txn({
            success: [
              { request: { case: "requestPut", value: { key: enc(`w/t${i}`), value: enc("t") } } },
            ],
          });
        } else await kv.put({ key: enc(`w/${i % 17}`), value: enc(`v${i}`) });
        if (i === 30) {
          const r = await kv.range({ key: enc("w/0") });
          await kv.compact({ revision: r.header!.revision - 5n });
        }
      } finally {
        kv.close();
      }
    }
    const rev = BigInt(c.nodes[0]!.store.revision);
    await waitFor(
      () => c.nodes.every((n) => BigInt(n.store.revision) >= rev),
      "every member at the revision",
    );
    const hashes = await Promise.all(c.addresses.map((a) => client(a).hashKv(rev)));
    for (const h of hashes) {
      assert.equal(h.hash, hashes[0]!.hash);
      assert.ok(h.compactRevision > 0n);
      assert.equal(h.compactRevision, hashes[0]!.compactRevision);
    }
  });

  test("Snapshot from a follower streams the cluster's keys", async () => {
    const kv = new EtcdGrpcClient(c.leaderAddress());
    await kv.put({ key: enc("snap/c"), value: enc("1") });
    kv.close();
    const follower = c.followerAddress();
    const local = new EtcdGrpcClient(follower);
    try {
      await waitFor(
        async () =>
          (await local.range({ key: enc("snap/c"), serializable: true })).kvs.length === 1,
        "the follower applied the put",
      );
    } finally {
      local.close();
    }
    const messages = await client(follower).snapshot();
    checkStream(messages);
    assert.ok((await restoredKeys(messages)).includes("snap/c"));
  });
});

describe("alarms and the quota on a 3-member cluster", () => {
  test("NOSPACE raised through a follower is seen by every member; disarm restores writes", async () => {
    const c = await startEtcdTestCluster(3, { quotaBackendBytes: 96 * 1024 });
    const clients: EtcdMaintenanceClient[] = c.addresses.map((a) => new EtcdMaintenanceClient(a));
    const follower = c.followerAddress();
    const kv = new EtcdGrpcClient(follower);
    try {
      const value = Buffer.alloc(8 * 1024, 121);
      let refused = -1;
      for (let i = 0; i < 200 && refused < 0; i++) {
        try {
          await kv.put({ key: enc(`q/${i}`), value });
        } catch (err) {
          assert.ok(isServiceError(err));
          assert.equal(err.details, NO_SPACE);
          assert.equal(err.code, RESOURCE_EXHAUSTED);
          refused = i;
        }
      }
      assert.ok(refused > 0);
      const followerId = BigInt(c.nodes[c.addresses.indexOf(follower)]!.store.memberId);
      await waitFor(async () => {
        for (const m of clients) {
          const a = (await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms;
          if (a.length !== 1 || a[0]!.memberID !== followerId || a[0]!.alarm !== AlarmType.NOSPACE)
            return false;
        }
        return true;
      }, "every member lists the alarm");
      // Every member refuses puts (once it read the alarm), reads are served.
      for (const address of c.addresses) {
        const other = new EtcdGrpcClient(address);
        try {
          await waitFor(async () => {
            try {
              await other.put({ key: enc("small"), value: enc("1") });
              return false;
            } catch (err) {
              return isServiceError(err) && err.details === NO_SPACE;
            }
          }, `${address} refuses puts`);
          await rejectsWith(other.leaseGrant({ TTL: 10n }), RESOURCE_EXHAUSTED, NO_SPACE);
          assert.equal((await other.range({ key: enc("q/0") })).kvs.length, 1);
        } finally {
          other.close();
        }
      }
      const del = await kv.deleteRange({ key: enc("q/"), rangeEnd: enc("q0") });
      await kv.compact({ revision: del.header!.revision, physical: true });
      for (const m of clients) await m.defragment();
      await clients[0]!.alarm({
        action: AlarmRequest_AlarmAction.DEACTIVATE,
        memberID: followerId,
        alarm: AlarmType.NOSPACE,
      });
      await waitFor(async () => {
        try {
          await kv.put({ key: enc("after"), value: enc("1") });
          return true;
        } catch {
          return false;
        }
      }, "writes resume after disarm");
      for (const m of clients)
        assert.deepEqual((await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms, []);
    } finally {
      kv.close();
      for (const m of clients) m.close();
      await c.stop();
    }
  });
});

describe("the corruption check on a 3-member cluster", () => {
  test("members agree: no alarm; a member whose store changed behind the log raises CORRUPT; writes refused", async () => {
    const c = await startEtcdTestCluster(3);
    const m = new EtcdMaintenanceClient(c.leaderAddress());
    const kv = new EtcdGrpcClient(c.leaderAddress());
    try {
      for (let i = 0; i < 10; i++) await kv.put({ key: enc(`c/${i}`), value: enc(`${i}`) });
      const leader = c.nodes[c.addresses.indexOf(c.leaderAddress())]!;
      const follower = c.nodes[c.addresses.indexOf(c.followerAddress())]!;
      const settled = () =>
        waitFor(
          () => c.nodes.every((n) => n.store.status().applied >= leader.store.status().commit),
          "every member applied",
        );
      await settled();
      await leader.corruption!.propose();
      await settled();
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual((await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms, []);
      // The follower's store gets a write the log never carried.
      const w = follower.store.localMvcc()!.write();
      await w.put(enc("c/0"), enc("tampered"), 0n);
      await w.end();
      await kv.put({ key: enc("c/next"), value: enc("1") });
      await settled();
      await leader.corruption!.propose();
      await waitFor(async () => {
        const a = (await m.alarm({ action: AlarmRequest_AlarmAction.GET })).alarms;
        return a.some(
          (x) => x.alarm === AlarmType.CORRUPT && x.memberID === BigInt(follower.store.memberId),
        );
      }, "CORRUPT raised for the follower");
      await waitFor(async () => {
        try {
          await kv.put({ key: enc("c/after"), value: enc("1") });
          return false;
        } catch (err) {
          return (
            isServiceError(err) && err.code === 15 && err.details === "etcdserver: corrupt cluster"
          );
        }
      }, "writes refused with etcd's corrupt error");
      assert.equal((await kv.range({ key: enc("c/1") })).kvs.length, 1, "reads are served");
    } finally {
      m.close();
      kv.close();
      await c.stop();
    }
  });
});
