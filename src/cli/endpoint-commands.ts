/**
 * `kv-engine endpoint status|health|hashkv`: etcd's Maintenance API (and Cluster's
 * MemberList for --cluster), for kv-engine and etcd alike. Each address of --addr (or, with
 * --cluster, each member's client URL) is asked on its own and reported; exit 1 when any
 * failed or (health) is unhealthy.
 */
import { create } from "@bufbuild/protobuf";
import { rangeRequest } from "../client/etcd/etcd-kv.js";
import { etcdMethods } from "../client/etcd/etcd-methods.js";
import {
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  AlarmType,
  HashKVRequestSchema,
  MemberListRequestSchema,
  StatusRequestSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_FAILURE, EXIT_OK, failureMessage, UsageError } from "./command.js";
import { etcdAdminMethods } from "./etcd-admin-methods.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  expectArgs,
  hexId as hex,
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

/**
 * Prints each endpoint's outcome: with --json one object per line (`json`'s fields after
 * the endpoint, or the error); else a table of the answers (`row`'s cells after the
 * endpoint) and then one line per failure. Returns EXIT_FAILURE when any failed.
 */
function report<T>(
  ctx: EtcdContext,
  results: readonly Outcome<T>[],
  head: readonly string[],
  json: (v: T) => object,
  row: (v: T) => string[],
): number {
  const rows: string[][] = [];
  for (const r of results) {
    if (ctx.json) {
      line(
        JSON.stringify(
          r.value === undefined
            ? { endpoint: r.endpoint, error: r.error }
            : { endpoint: r.endpoint, ...json(r.value) },
        ),
      );
    } else if (r.value !== undefined) {
      rows.push([r.endpoint, ...row(r.value)]);
    }
  }
  if (!ctx.json) {
    if (rows.length > 0) line(textTable([...head], rows).join("\n"));
    for (const r of results) if (r.error !== undefined) line(`${r.endpoint}: ${r.error}`);
  }
  return results.every((r) => r.error === undefined) ? EXIT_OK : EXIT_FAILURE;
}

const STATUS_HEAD = [
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
  return report(
    ctx,
    results,
    STATUS_HEAD,
    (s) => ({
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
    }),
    (s) => [
      hex(s.header?.memberId ?? 0n),
      s.version,
      formatBytes(Number(s.dbSize)),
      s.leader === (s.header?.memberId ?? 0n) ? "true" : "false",
      s.isLearner ? "true" : "false",
      String(s.raftTerm),
      String(s.raftIndex),
      String(s.raftAppliedIndex),
      s.errors.join(", "),
    ],
  );
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
  return report(
    ctx,
    results,
    ["ENDPOINT", "HASH", "COMPACT REVISION", "REVISION"],
    (h) => ({
      hash: h.hash,
      compactRevision: Number(h.compactRevision),
      revision: Number(h.header?.revision ?? 0n),
    }),
    (h) => [String(h.hash), String(h.compactRevision), String(h.header?.revision ?? 0n)],
  );
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
