/**
 * `kv-engine endpoint status|health|hashkv`, `alarm list|disarm` and `snapshot
 * save|restore`: etcd's Maintenance API (and Cluster's MemberList for `endpoint
 * --cluster`), for kv-engine and etcd alike. `endpoint` asks each address of --addr (or,
 * with --cluster, each member's client URL) on its own and reports every one; it exits 1
 * when any failed. `snapshot restore` is `kv-engine restore` (store-commands.ts).
 */
import { once } from "node:events";
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { contextOf } from "../client/call-runner.js";
import type { EtcdClient } from "../client/etcd/etcd-client.js";
import { rangeRequest } from "../client/etcd/etcd-kv.js";
import { etcdMethods } from "../client/etcd/etcd-methods.js";
import {
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  AlarmType,
  HashKVRequestSchema,
  MemberListRequestSchema,
  SnapshotRequestSchema,
  StatusRequestSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_FAILURE, EXIT_OK, failureMessage, UsageError } from "./command.js";
import { etcdAdminMethods } from "./etcd-admin-methods.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  expectArgs,
  line,
  parseRevision,
  runEtcdCommand,
} from "./etcd-command.js";
import { formatBytes, textTable } from "./text-table.js";

const ENDPOINT_USAGE = `Usage: kv-engine endpoint ACTION [options]

Actions (etcd's Maintenance API; each address of --addr asked on its own):
  status                    version, storage size, leader, learner, Raft term and indexes,
                            alarms
  health                    whether the endpoint answers a linearizable read and has no
                            alarm raised, and how long it took
  hashkv [--rev N]          the hash of the multi-version store up to revision N (default:
                            now): members that applied the same writes agree

Endpoint options:
  --cluster                 ask every member the endpoints list (their client URLs)
  --rev N                   (hashkv) the revision to hash up to
Exits 1 when any endpoint failed or (health) is unhealthy; --json prints one object per
endpoint, per line.
`;

/** Client addresses of `endpoint --cluster`: every member's first client URL. */
async function targets(ctx: EtcdContext): Promise<string[]> {
  if (ctx.parsed.values.cluster !== true) return [...ctx.client.endpoints];
  const r = await ctx.client.calls.unary(
    "read",
    etcdAdminMethods.MemberList,
    create(MemberListRequestSchema, {}),
    undefined,
  );
  const out: string[] = [];
  for (const m of r.members) {
    const url = m.clientURLs[0];
    if (url !== undefined) out.push(url.replace(/^[a-z]+:\/\//, "").replace(/\/$/, ""));
  }
  if (out.length === 0) throw new Error("no member has published a client URL yet");
  return out;
}

type Outcome<T> =
  | { endpoint: string; value: T; error?: undefined }
  | { endpoint: string; value?: undefined; error: string };

async function eachEndpoint<T>(
  endpoints: readonly string[],
  ask: (endpoint: string) => Promise<T>,
): Promise<Outcome<T>[]> {
  return Promise.all(
    endpoints.map(async (endpoint) => {
      try {
        return { endpoint, value: await ask(endpoint) };
      } catch (err) {
        return { endpoint, error: failureMessage(err) };
      }
    }),
  );
}

const hex = (n: bigint) => BigInt.asUintN(64, n).toString(16);

async function status(ctx: EtcdContext): Promise<number> {
  const results = await eachEndpoint(await targets(ctx), (e) =>
    ctx.client.calls.unaryAt(
      e,
      "read",
      etcdAdminMethods.Status,
      create(StatusRequestSchema, {}),
      undefined,
    ),
  );
  const rows: string[][] = [];
  for (const r of results) {
    const s = r.value;
    if (ctx.json) {
      line(
        JSON.stringify(
          s === undefined
            ? { endpoint: r.endpoint, error: r.error }
            : {
                endpoint: r.endpoint,
                memberId: hex(s.header?.memberId ?? 0n),
                clusterId: hex(s.header?.clusterId ?? 0n),
                version: s.version,
                dbSize: Number(s.dbSize),
                dbSizeInUse: Number(s.dbSizeInUse),
                leader: hex(s.leader),
                isLeader: s.leader === (s.header?.memberId ?? 0n),
                isLearner: s.isLearner,
                raftTerm: Number(s.raftTerm),
                raftIndex: Number(s.raftIndex),
                raftAppliedIndex: Number(s.raftAppliedIndex),
                revision: Number(s.header?.revision ?? 0n),
                errors: s.errors,
              },
        ),
      );
    } else if (s !== undefined) {
      rows.push([
        r.endpoint,
        hex(s.header?.memberId ?? 0n),
        s.version,
        formatBytes(Number(s.dbSize)),
        s.leader === (s.header?.memberId ?? 0n) ? "true" : "false",
        s.isLearner ? "true" : "false",
        String(s.raftTerm),
        String(s.raftIndex),
        String(s.raftAppliedIndex),
        s.errors.join(", "),
      ]);
    }
  }
  if (!ctx.json) {
    if (rows.length > 0) {
      const head = [
        "ENDPOINT",
        "ID",
        "VERSION",
        "DB SIZE",
        "IS LEADER",
        "IS LEARNER",
        "RAFT TERM",
        "RAFT INDEX",
        "RAFT APPLIED INDEX",
        "ERRORS",
      ];
      line(textTable(head, rows).join("\n"));
    }
    for (const r of results) if (r.error !== undefined) line(`${r.endpoint}: ${r.error}`);
  }
  return results.every((r) => r.error === undefined) ? EXIT_OK : EXIT_FAILURE;
}

async function health(ctx: EtcdContext): Promise<number> {
  const results = await eachEndpoint(await targets(ctx), async (e) => {
    const start = performance.now();
    // A linearizable read (it needs a leader and a quorum), then the alarms.
    await ctx.client.calls.unaryAt(e, "read", etcdMethods.Range, rangeRequest("health"), undefined);
    const alarms = await ctx.client.calls.unaryAt(
      e,
      "read",
      etcdAdminMethods.Alarm,
      create(AlarmRequestSchema, { action: AlarmRequest_AlarmAction.GET }),
      undefined,
    );
    const took = Math.round(performance.now() - start);
    const raised = alarms.alarms.map((a) => AlarmType[a.alarm]);
    return { took, raised };
  });
  let healthy = true;
  for (const r of results) {
    const ok = r.value !== undefined && r.value.raised.length === 0;
    healthy &&= ok;
    const why =
      r.error ??
      (r.value !== undefined && r.value.raised.length > 0
        ? `alarm raised: ${r.value.raised.join(", ")}`
        : undefined);
    if (ctx.json) {
      line(
        JSON.stringify({
          endpoint: r.endpoint,
          health: ok,
          ...(r.value === undefined ? {} : { tookMs: r.value.took }),
          ...(why === undefined ? {} : { error: why }),
        }),
      );
    } else {
      line(
        ok
          ? `${r.endpoint} is healthy: a linearizable read took ${r.value!.took} ms`
          : `${r.endpoint} is unhealthy: ${why}`,
      );
    }
  }
  return healthy ? EXIT_OK : EXIT_FAILURE;
}

async function hashKv(ctx: EtcdContext): Promise<number> {
  const rev = ctx.parsed.values.rev;
  const revision = typeof rev === "string" ? parseRevision(rev, "--rev") : 0;
  const results = await eachEndpoint(await targets(ctx), (e) =>
    ctx.client.calls.unaryAt(
      e,
      "read",
      etcdAdminMethods.HashKV,
      create(HashKVRequestSchema, { revision: BigInt(revision) }),
      undefined,
    ),
  );
  const rows: string[][] = [];
  for (const r of results) {
    const h = r.value;
    if (ctx.json) {
      line(
        JSON.stringify(
          h === undefined
            ? { endpoint: r.endpoint, error: r.error }
            : {
                endpoint: r.endpoint,
                hash: h.hash,
                compactRevision: Number(h.compactRevision),
                revision: Number(h.header?.revision ?? 0n),
              },
        ),
      );
    } else if (h !== undefined) {
      rows.push([
        r.endpoint,
        String(h.hash),
        String(h.compactRevision),
        String(h.header?.revision ?? 0n),
      ]);
    }
  }
  if (!ctx.json) {
    if (rows.length > 0)
      line(textTable(["ENDPOINT", "HASH", "COMPACT REVISION", "REVISION"], rows).join("\n"));
    for (const r of results) if (r.error !== undefined) line(`${r.endpoint}: ${r.error}`);
  }
  return results.every((r) => r.error === undefined) ? EXIT_OK : EXIT_FAILURE;
}

export function endpointCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "endpoint",
    `${ENDPOINT_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { cluster: { type: "boolean" }, rev: { type: "string" } },
    async (ctx) => {
      const [action, ...rest] = ctx.args;
      if (action === undefined) throw new UsageError("give an action: status, health or hashkv");
      expectArgs(rest, []);
      if (action !== "hashkv" && ctx.parsed.values.rev !== undefined) {
        throw new UsageError("--rev goes with hashkv");
      }
      if (action === "status") return status(ctx);
      if (action === "health") return health(ctx);
      if (action === "hashkv") return hashKv(ctx);
      throw new UsageError(`unknown action '${action}' (status, health, hashkv)`);
    },
  );
}

const ALARM_USAGE = `Usage: kv-engine alarm ACTION [options]

Actions (etcd's Maintenance API):
  list                      the alarms raised: "memberID:ID alarm:NOSPACE" per line
  disarm                    clear every alarm raised (writes resume; NOSPACE is raised
                            again by the next write while the store is still full)
`;

async function alarms(
  client: EtcdClient,
  action: AlarmRequest_AlarmAction,
  memberID = 0n,
  alarm = AlarmType.NONE,
) {
  const r = await client.calls.unary(
    action === AlarmRequest_AlarmAction.GET ? "read" : "write",
    etcdAdminMethods.Alarm,
    create(AlarmRequestSchema, { action, memberID, alarm }),
    undefined,
  );
  return r.alarms;
}

export function alarmCommand(argv: string[]): Promise<number> {
  return runEtcdCommand("alarm", `${ALARM_USAGE}\n${ETCD_COMMON_USAGE}`, argv, {}, async (ctx) => {
    const [action, ...rest] = ctx.args;
    if (action !== "list" && action !== "disarm") {
      throw new UsageError(
        action === undefined
          ? "give an action: list or disarm"
          : `unknown action '${action}' (list, disarm)`,
      );
    }
    expectArgs(rest, []);
    const list = await alarms(ctx.client, AlarmRequest_AlarmAction.GET);
    if (action === "disarm") {
      for (const a of list)
        await alarms(ctx.client, AlarmRequest_AlarmAction.DEACTIVATE, a.memberID, a.alarm);
    }
    const shown = list.map((a) => ({
      memberId: hex(a.memberID),
      alarm: AlarmType[a.alarm] ?? String(a.alarm),
    }));
    if (ctx.json) line(JSON.stringify(action === "list" ? { alarms: shown } : { disarmed: shown }));
    else if (action === "disarm" && shown.length === 0) line("no alarm was raised");
    else
      for (const a of shown)
        line(`${action === "disarm" ? "disarmed " : ""}memberID:${a.memberId} alarm:${a.alarm}`);
    return EXIT_OK;
  });
}

const SNAPSHOT_USAGE = `Usage: kv-engine snapshot save FILE [options]
       kv-engine snapshot restore FILE --data-dir DIR [--json]

  save FILE                 stream a consistent snapshot of the store of the first --addr
                            (etcd's Maintenance.Snapshot) into FILE (written to FILE.part,
                            renamed when complete). Of kv-engine: its own format, which
                            'snapshot restore' and 'serve --initial-snapshot' read; of
                            etcd: its bbolt file, for etcdctl/etcdutl snapshot restore
  restore FILE --data-dir DIR
                            write the store of a kv-engine snapshot into DIR (kv-engine
                            restore --snapshot FILE --data-dir DIR: its help says more)
The snapshot has no deadline unless --timeout-ms gives one.

Snapshot options:
  --data-dir DIR            (restore) where the store goes (must not exist)
`;

export async function snapshotCommand(argv: string[]): Promise<number> {
  const { splitCommand } = await import("./command.js");
  const first = splitCommand(argv);
  if (first.command === "restore") {
    const { restoreCommand } = await import("./store-commands.js");
    // FILE, the first argument that is no option's value, is restore's --snapshot.
    const file = splitCommand(first.args);
    const args =
      file.command === undefined || first.args.includes("--snapshot")
        ? first.args
        : ["--snapshot", file.command, ...file.args];
    return restoreCommand(args);
  }
  return runEtcdCommand(
    "snapshot",
    `${SNAPSHOT_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { "data-dir": { type: "string" } },
    async (ctx) => {
      const [action, ...rest] = ctx.args;
      if (action !== "save") {
        throw new UsageError(
          action === undefined
            ? "give an action: save or restore"
            : `unknown action '${action}' (save, restore)`,
        );
      }
      const [file] = expectArgs(rest, ["FILE"]);
      if (ctx.parsed.values["data-dir"] !== undefined)
        throw new UsageError("--data-dir goes with restore");
      return save(ctx, file!);
    },
  );
}

async function save(ctx: EtcdContext, file: string): Promise<number> {
  const endpoint = ctx.client.endpoints[0]!;
  const timeout =
    ctx.parsed.values["timeout-ms"] === undefined ? undefined : ctx.client.calls.timeoutMs;
  const deadline = timeout === undefined ? undefined : Date.now() + timeout;
  const context = contextOf(
    { endpoint, deadline, timeoutMs: timeout, partial: false, connectBy: undefined },
    etcdAdminMethods.Snapshot.path,
    "read",
  );
  const part = `${file}.part`;
  const out = createWriteStream(part);
  const opened = once(out, "open").catch((err: Error) => {
    throw new Error(`cannot write ${part}: ${err.message}`);
  });
  await opened;
  let bytes = 0;
  let complete = false;
  try {
    const stream = ctx.client.calls.transport.serverStream(
      endpoint,
      etcdAdminMethods.Snapshot,
      create(SnapshotRequestSchema, {}),
      deadline,
      context,
    );
    for await (const m of stream) {
      bytes += m.blob.length;
      if (!out.write(m.blob)) await once(out, "drain");
      if (m.remainingBytes === 0n) complete = true;
    }
    if (!complete) throw new Error("the snapshot stream ended before its last part");
    out.end();
    await once(out, "finish");
    renameSync(part, file);
  } catch (err) {
    out.destroy();
    rmSync(part, { force: true });
    throw new Error(`snapshot of ${endpoint} not saved: ${failureMessage(err)}`);
  }
  line(
    ctx.json
      ? JSON.stringify({ endpoint, file, bytes })
      : `snapshot of ${endpoint} saved to ${file} (${bytes} bytes, ${formatBytes(bytes)})`,
  );
  return EXIT_OK;
}
