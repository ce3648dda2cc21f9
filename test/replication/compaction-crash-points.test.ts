/**
 * Crash points around an etcd compaction in a cluster (issue 28, point 8): a follower
 * loses power before each file-changing operation (in turn, or a seeded sample) from the
 * moment a Compact request is proposed, with history behind it long enough for several
 * physical compaction chunks, until it has applied the writes that follow and finished
 * the physical compaction. Its disk keeps what was synced (and unsynced writes with a
 * seeded retention); it restarts from that and must end like the others: the same keys,
 * revisions, versions, store revision and compacted revision (assertConverged), the same
 * answer to a range at the compacted revision, a read below it refused as compacted, and
 * a physical compaction that was cut resumed to the end: every member's multi-version keys
 * (latest, history, changes, and the compaction's bookkeeping) are the same bytes.
 *
 * KV_STRESS=1 crashes at every operation of the window; KV_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { isKvError } from "../../src/errors.js";
import {
  COMPACT_CURSOR_KEY,
  COMPACT_FINISHED_KEY,
  COMPACT_SCHEDULED_KEY,
  REVISION_KEY,
} from "../../src/mvcc/layout.js";
import type { MvccStore } from "../../src/mvcc/mvcc-store.js";
import {
  CompactionRequestSchema,
  DeleteRangeRequestSchema,
  PutRequestSchema,
  RequestOpSchema,
  TxnRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccRequest } from "../../src/replication/mvcc-request.js";
import { getFixed64 } from "../../src/util/coding.js";
import {
  FaultInjectingFileSystem,
  type FileOp,
} from "../../src/vfs/fault-injecting-file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { chooseCrashPoints, describeOp } from "../support/crash-points.js";
import { CHANGING, isBigStoreAppend, mvccOf } from "../support/member-crash.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

const STRESS = process.env["KV_STRESS"] === "1";
/** Keys written before the compaction; each txn puts TXN_PUTS of them. */
const KEYS = 200;
const TXN_PUTS = 100;
const TXNS = 14;
/** Crash points of the default run (a sample; every one with KV_STRESS=1). */
const POINTS = 8;

const key = (i: number) => `k${String(i).padStart(3, "0")}`;

async function meta(m: MvccStore, k: Uint8Array): Promise<number | undefined> {
  const v = await m.store.get(k);
  return v === undefined || v.length !== 8 ? undefined : getFixed64(v, 0);
}

/** Every multi-version key of a member (latest, history, changes) and its meta keys. */
async function mvccKeys(m: MvccStore): Promise<string> {
  const rows = await m.store.iterator({ gte: Uint8Array.of(0x02), lt: Uint8Array.of(0x05) }).all();
  const lines = rows.map(
    ([k, v]) => `${Buffer.from(k).toString("hex")}=${Buffer.from(v).toString("hex")}`,
  );
  for (const [name, k] of [
    ["revision", REVISION_KEY],
    ["scheduled", COMPACT_SCHEDULED_KEY],
    ["finished", COMPACT_FINISHED_KEY],
    ["cursor", COMPACT_CURSOR_KEY],
  ] as const) {
    const v = await m.store.get(k);
    lines.push(`${name} ${v === undefined ? "absent" : Buffer.from(v).toString("hex")}`);
  }
  return lines.join("\n");
}

function txn(puts: readonly [string, string][], deletes: readonly string[] = []): MvccRequest {
  return {
    kind: "txn",
    request: create(TxnRequestSchema, {
      success: [
        ...puts.map(([k, v]) =>
          create(RequestOpSchema, {
            request: {
              case: "requestPut",
              value: create(PutRequestSchema, { key: bytes(k), value: bytes(v) }),
            },
          }),
        ),
        ...deletes.map((k) =>
          create(RequestOpSchema, {
            request: {
              case: "requestDeleteRange",
              value: create(DeleteRangeRequestSchema, { key: bytes(k) }),
            },
          }),
        ),
      ],
    }),
  };
}

interface RunResult {
  /** The file-changing operations of the window (the dry run's). */
  readonly ops: FileOp[];
  /** The crash happened (a run with a crash point). */
  readonly crashed: boolean;
  /** The victim reopened with an unfinished physical compaction. */
  readonly resumed: boolean;
  readonly compacted: number;
}

/** Whether `op` writes a physical compaction chunk: a store log append of a big batch of deletes. */
const isChunk = (op: FileOp) => isBigStoreAppend(op, 4096);

type Victim = "follower" | "leader";

/**
 * One run: `crashAt` undefined is the dry run (counting the window's operations); `chunk`:
 * the victim loses power before its physical compaction's chunk `crashAt` (0-based), with
 * every unsynced write kept (so that the reopened store resumes it); else the
 * victim (a follower, or the leader) loses power before the window's file-changing
 * operation `crashAt`. Requests are proposed through another member.
 */
async function run(
  seed: number,
  role: Victim,
  crashAt: number | undefined,
  chunk = false,
): Promise<RunResult> {
  const random = rng(seed);
  const c = await TestCluster.start({ size: 3, seed });
  try {
    const first = await c.waitForLeader();
    const names = [...c.slots.keys()];
    const victim = names.find((n) => n !== first.name)!;
    const proposer = names.find((n) => n !== victim)!;
    const slot = c.slot(victim);
    await c.stop(victim);
    const mem = slot.fs as MemoryFileSystem;
    const ops: FileOp[] = [];
    let counting = false;
    let crashed: MemoryFileSystem | undefined;
    let crashOp: FileOp | undefined;
    /** The victim reopened with a physical compaction to finish. */
    let resumed = false;
    // Unsynced writes kept: none, some or all in turn over the crash points; all before a chunk.
    const retention = chunk ? 1 : [0, 0.5, 1][((crashAt ?? 0) + seed) % 3]!;
    let chunks = 0;
    const cloneSeed = (seed ^ ((crashAt ?? 0) * 0x9e3779b1)) >>> 0;
    slot.fs = new FaultInjectingFileSystem(mem, {
      onOp: (op) => {
        if (!counting || crashed !== undefined || !CHANGING.has(op.kind)) return;
        if (chunk ? isChunk(op) && chunks++ === crashAt : ops.length === crashAt) {
          // Power loss before this operation: nothing more leaves the member.
          void slot.transport?.close();
          crashOp = op;
          crashed = mem.crashClone({ unsyncedRetention: retention, seed: cloneSeed });
          return;
        }
        ops.push(op);
      },
    });
    await c.startMember(victim);
    if (role === "leader") {
      const victimId = c.store(victim).memberId;
      await waitFor(async () => {
        const l = c.leader();
        if (l?.name === victim) return true;
        await l?.transferLeadership(victimId).catch(() => {});
        return false;
      }, `seed ${seed}: ${victim} leads`);
    } else {
      await c.waitForLeader();
    }
    /**
     * Proposes `r` through the proposer until answered. With `maybe`, an unknown outcome
     * (the leader crashed with it) is an answer; a compaction answered "compacted" after
     * one was applied.
     */
    const write = async (r: MvccRequest, maybe = false): Promise<void> => {
      const until = Date.now() + 20_000;
      for (;;) {
        try {
          await TestCluster.retry(() => c.store(proposer).request(r, { timeoutMs: 2000 }));
          return;
        } catch (err) {
          if (Date.now() > until) throw err;
          if (maybe && isKvError(err, "OUTCOME_UNKNOWN") && r.kind !== "compact") return;
          if (r.kind === "compact" && isKvError(err, "COMPACTED")) return;
          if (!isKvError(err, "OUTCOME_UNKNOWN")) throw err;
        }
      }
    };

    // History for several physical compaction chunks: each txn puts TXN_PUTS keys of KEYS
    // (so each key has several versions), some txns delete a few.
    for (let t = 0; t < TXNS; t++) {
      const puts: [string, string][] = [];
      const start = randInt(random, KEYS);
      for (let i = 0; i < TXN_PUTS; i++) puts.push([key((start + i) % KEYS), `v${t}.${i}`]);
      const deletes =
        t % 4 === 3 ? [key((start + TXN_PUTS) % KEYS), key((start + TXN_PUTS + 7) % KEYS)] : [];
      await write(txn(puts, deletes));
    }
    await write(txn([[key(0), "before"]]));
    const target = c.store(proposer).revision;
    await c.waitForApplied((await c.waitForLeader()).status().commit);

    // The window: the compaction, then writes, until the victim applied them all and
    // finished compacting physically (or crashed).
    counting = true;
    const compaction = create(CompactionRequestSchema, { revision: BigInt(target) });
    await write({ kind: "compact", request: compaction });
    for (let i = 0; i < 6; i++) {
      await write(
        i % 3 === 2
          ? txn([], [key(i)])
          : txn([
              [key(i), `after${i}`],
              [key(100 + i), "x"],
            ]),
        true,
      );
    }
    const last = (await c.waitForLeader()).status().commit;
    await waitFor(
      async () => {
        if (crashed !== undefined) return true;
        const s = c.store(victim);
        if (s.status().applied < last) return false;
        return ((await meta(mvccOf(s), COMPACT_FINISHED_KEY)) ?? 0) >= target;
      },
      `seed ${seed}: the victim applied the writes and compacted, or crashed`,
      20_000,
    );
    counting = false;
    const context = `seed ${seed}, ${role} ${victim}, compacted to ${target}, crash at ${chunk ? "chunk " : ""}${crashAt ?? "none"} (${
      crashOp === undefined ? "none" : describeOp(crashOp)
    }; retention ${retention})`;
    if (crashed !== undefined) {
      const old = slot.store;
      slot.store = undefined;
      await old?.close().catch(() => {});
      slot.fs = crashed;
      resumed = mvccOf(await c.startMember(victim)).resumed !== undefined;
      await write(txn([[key(7), "after the crash"]]));
    }

    await assertConverged(c, context);
    // The physical compaction finished everywhere (resumed where it was cut), to the same bytes.
    await waitFor(
      async () => {
        for (const s of c.running()) {
          const m = mvccOf(s);
          if (((await meta(m, COMPACT_FINISHED_KEY)) ?? 0) < target) return false;
          if ((await m.store.get(COMPACT_CURSOR_KEY)) !== undefined) return false;
        }
        return true;
      },
      `${context}: every member finished compacting`,
      20_000,
    );
    const members = c.running();
    const layouts = await Promise.all(members.map((s) => mvccKeys(mvccOf(s))));
    for (let i = 1; i < members.length; i++) {
      assert.equal(
        layouts[i],
        layouts[0],
        `${context}: ${members[i]!.name}'s multi-version keys differ from ${members[0]!.name}'s`,
      );
    }
    const answers: string[] = [];
    for (const s of members) {
      const view = await s.view({ serializable: true });
      try {
        assert.equal(view.compactRevision, target, `${context}: ${s.name}'s compacted revision`);
        await assert.rejects(
          view.range(bytes("k"), bytes("l"), { revision: target - 1 }),
          (err: unknown) => isKvError(err, "COMPACTED"),
          `${context}: ${s.name} reads below the compacted revision`,
        );
        const at = await view.range(bytes("k"), bytes("l"), { revision: target });
        assert.equal(text(at.kvs[0]!.value), "before", `${context}: ${s.name}: k000 at ${target}`);
        answers.push(
          at.kvs
            .map(
              (kv) =>
                `${text(kv.key)}=${text(kv.value)} ${kv.createRevision}/${kv.modRevision}/${kv.version}`,
            )
            .join(","),
        );
      } finally {
        view.release();
      }
    }
    for (let i = 1; i < members.length; i++) {
      assert.equal(answers[i], answers[0], `${context}: ${members[i]!.name}'s range at ${target}`);
    }
    return { ops, crashed: crashed !== undefined, resumed, compacted: target };
  } finally {
    await c.close();
  }
}

async function crashPoints(t: TestContext, role: Victim, max: number): Promise<void> {
  const seed = testSeed();
  const dry = await run(seed, role, undefined);
  assert.ok(dry.ops.length > 10, `seed ${seed}: only ${dry.ops.length} file changes in the window`);
  const points = chooseCrashPoints(seed, dry.ops, max, STRESS);
  // Always: the first and last few (the compaction's apply, the last chunk and its end),
  // and the physical compaction's chunks.
  for (const i of [0, 1, 2, dry.ops.length - 2, dry.ops.length - 1]) if (i >= 0) points.add(i);
  // Before each chunk, with every unsynced write kept: the reopened store resumes the
  // compaction (with fewer kept, the log's compaction entry may be applied again instead).
  const chunks = dry.ops.filter(isChunk).length;
  let crashed = 0;
  let resumed = 0;
  const runs = [
    ...[...points].sort((a, b) => a - b).map((at) => ({ at, chunk: false })),
    ...Array.from({ length: chunks }, (_, at) => ({ at, chunk: true })),
  ];
  for (const { at, chunk } of runs) {
    const r = await run(seed, role, at, chunk);
    if (r.crashed) crashed++;
    if (r.resumed) resumed++;
  }
  const kinds = new Map<string, number>();
  for (const op of dry.ops) kinds.set(op.kind, (kinds.get(op.kind) ?? 0) + 1);
  t.diagnostic(
    `seed ${seed} (${role}): ${dry.ops.length} file changes in the window (${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")}; ${dry.ops.filter(isChunk).length} compaction chunks), compacted to ${dry.compacted}; crashed at ${crashed} of ${runs.length} points, ${resumed} of them reopening with a physical compaction to finish`,
  );
  assert.ok(
    crashed >= runs.length / 2,
    `seed ${seed}: only ${crashed} of ${runs.length} runs reached their crash point`,
  );
  assert.ok(resumed > 0, `seed ${seed}: no crash cut a physical compaction`);
}

describe("crash points around a compaction", () => {
  test("a follower losing power before each file change from a Compact's proposal until its physical compaction ends: it reopens at the others' revisions and compacted revision, and the cut compaction resumes to the same keys", async (t) => {
    await crashPoints(t, "follower", POINTS);
  });

  test("the same with the leader losing power (the requests proposed through a follower)", async (t) => {
    await crashPoints(t, "leader", POINTS / 2);
  });
});
