/**
 * Client loops through etcd's KV API against a cluster's members (each loop holds a
 * client per member and picks one at random per call), recording a history of
 * transactions for checkTxnLinearizability and reads at revisions for checkRevisionReads.
 * On a few keys: Kubernetes-style creates (mod_revision == 0 then put, else range) and
 * updates (mod_revision == the one last seen then put, else range), multi-key txns (a
 * compare on one key, puts of two others, else a range of the first), plain puts,
 * deleteRanges of one key or all, linearizable Ranges of one key or all, Ranges at a
 * revision taken from an earlier answer, and now and then a Compact to an older revision.
 *
 * Outcomes: an answer completes the operation. A failed read says nothing (it leaves the
 * history). A write refused with an error that says nothing was done (etcd's "no leader":
 * no leader known, nothing proposed; "too many requests": refused before proposing; a
 * call grpc-js never sent for want of a connection) took no effect; any other failure of a
 * write (a deadline, a broken connection, "request timed out") may or may not take effect.
 * Status codes a faulty cluster should not answer (anything but UNAVAILABLE,
 * DEADLINE_EXCEEDED, CANCELLED, RESOURCE_EXHAUSTED, and OUT_OF_RANGE "compacted" to a read
 * at a revision or a compaction) are collected in `unexpected`.
 */
import { status } from "@grpc/grpc-js";
import { EtcdGrpcClient, isServiceError } from "./etcd-grpc-client.js";
import { rangeAt, sendTxnInput } from "./etcd-txn-wire.js";
import type { CompactCall, RevisionRead } from "./linearizability/check-revision-reads.js";
import type { TxnInput, TxnOperation, TxnOutput } from "./linearizability/index.js";
import { randInt } from "./random.js";

const EXPECTED_CODES = new Set<number>([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.CANCELLED,
  status.RESOURCE_EXHAUSTED,
]);

/**
 * grpc-js reconnects after up to 120 s by default: a member restarted after a kill would
 * get no calls for the rest of a short run.
 */
const RECONNECT = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1000,
};

const COMPACTED = "etcdserver: mvcc: required revision has been compacted";

export interface EtcdWorkloadOptions {
  readonly clients: number;
  /** The keys written, in key order, all inside [range.key, range.end). */
  readonly keys: readonly string[];
  readonly range: { readonly key: string; readonly end: string };
  readonly random: () => number;
  /** The members' client addresses. */
  readonly endpoints: readonly string[];
  readonly stop: () => boolean;
  /** Deadline per call. */
  readonly timeoutMs: number;
  /** The history's clock. */
  readonly now: () => number;
}

export class EtcdWorkloadResult {
  readonly history: TxnOperation[] = [];
  readonly revisionReads: RevisionRead[] = [];
  readonly compactions: CompactCall[] = [];
  ops = 0;
  completed = 0;
  /** Writes of unknown outcome. */
  unknownWrites = 0;
  /** "txn UNAVAILABLE: etcdserver: no leader" -> count: how calls failed. */
  readonly errors = new Map<string, number>();
  readonly unexpected: string[] = [];
  /** Operations by kind ("create ok", "update failed-compare", ...). */
  readonly kinds = new Map<string, number>();

  count(map: Map<string, number>, name: string): void {
    map.set(name, (map.get(name) ?? 0) + 1);
  }

  summary(): string {
    const show = (m: Map<string, number>) =>
      [...m]
        .sort()
        .map(([k, n]) => `${k} x${n}`)
        .join(", ") || "none";
    const compacted = this.revisionReads.filter((r) => r.answer === "compacted").length;
    return `${this.ops} calls, ${this.completed} answered, ${this.unknownWrites} writes of unknown outcome; ${this.revisionReads.length} reads at a revision answered (${compacted} compacted), ${this.compactions.length} compactions; kinds: ${show(this.kinds)}; errors: ${show(this.errors)}`;
  }
}

/** What a failed call says about its effect. */
function failureOf(err: unknown): { name: string; nothingDone: boolean; expected: boolean } {
  if (!isServiceError(err)) return { name: String(err), nothingDone: false, expected: false };
  const details = err.details;
  const nothingDone =
    (err.code === status.UNAVAILABLE &&
      (details === "etcdserver: no leader" || details.startsWith("No connection established"))) ||
    (err.code === status.RESOURCE_EXHAUSTED && details === "etcdserver: too many requests");
  const short = details.replace(/\. Last error:.*/, "").slice(0, 60);
  return {
    name: `${status[err.code] ?? err.code}: ${short}`,
    nothingDone,
    expected: EXPECTED_CODES.has(err.code),
  };
}

const isCompacted = (err: unknown) =>
  isServiceError(err) && err.code === status.OUT_OF_RANGE && err.details === COMPACTED;

const isRead = (input: TxnInput) =>
  [...input.success, ...input.failure].every((o) => o.type === "range");

/** Runs the loops until `stop()`; resolves once every loop ended (its clients closed). */
export async function runEtcdWorkload(w: EtcdWorkloadOptions): Promise<EtcdWorkloadResult> {
  const result = new EtcdWorkloadResult();
  const r = w.random;
  /** Header revisions answered so far (reads at a revision pick from them). */
  const seen: number[] = [];
  let lastCompact = 0;

  const pick = <T>(a: readonly T[]): T => a[randInt(r, a.length)]!;
  /** Failed calls by loop (a loop pauses after one). */
  const failed: number[] = Array.from({ length: w.clients }, () => 0);
  const fail = (id: number, what: string, err: unknown) => {
    failed[id]!++;
    const f = failureOf(err);
    result.count(result.errors, `${what} ${f.name}`);
    if (!f.expected) result.unexpected.push(`${what}: ${f.name}`);
    return f;
  };

  /** Sends `input`, recorded; resolves with its answer, or undefined if it failed. */
  const recorded = async (
    client: EtcdGrpcClient,
    id: number,
    kind: string,
    input: TxnInput,
  ): Promise<TxnOutput | undefined> => {
    const call = w.now();
    result.ops++;
    try {
      const output = await sendTxnInput(client, input);
      result.history.push({ client: id, input, output, call, return: w.now() });
      result.completed++;
      seen.push(output.revision);
      const branch = input.compares.length === 0 ? "ok" : output.succeeded ? "ok" : "else";
      result.count(result.kinds, `${kind} ${branch}`);
      return output;
    } catch (err) {
      const f = fail(id, kind, err);
      if (!isRead(input) && !f.nothingDone) {
        result.history.push({
          client: id,
          input,
          output: undefined,
          call,
          return: Number.POSITIVE_INFINITY,
        });
        result.unknownWrites++;
      }
      return undefined;
    }
  };

  const loop = async (id: number) => {
    const clients = w.endpoints.map((a) => new EtcdGrpcClient(a, {}, w.timeoutMs, RECONNECT));
    /** The mod revision this loop last saw of each key (0: absent). */
    const mods = new Map<string, number>();
    const learn = (out: TxnOutput | undefined) => {
      for (const res of out?.results ?? []) {
        if (res.type !== "range") continue;
        for (const kv of res.kvs) mods.set(kv.key, kv.modRevision);
      }
    };
    let seq = 0;
    try {
      while (!w.stop()) {
        const client = pick(clients);
        const key = pick(w.keys);
        const value = `${id}.${seq++}`;
        const failures = failed[id];
        const x = r();
        const all = { type: "range" as const, key: w.range.key, end: w.range.end };
        let out: TxnOutput | undefined;
        if (x < 0.12) {
          out = await recorded(client, id, "get", {
            compares: [],
            success: [{ type: "range", key }],
            failure: [],
          });
          if (out?.results[0]?.type === "range" && out.results[0].kvs.length === 0)
            mods.set(key, 0);
        } else if (x < 0.22) {
          out = await recorded(client, id, "list", { compares: [], success: [all], failure: [] });
          if (out !== undefined) for (const k of w.keys) mods.set(k, 0);
        } else if (x < 0.34) {
          out = await recorded(client, id, "create", {
            compares: [{ key, target: "mod", op: "==", value: 0 }],
            success: [{ type: "put", key, value }],
            failure: [{ type: "range", key }],
          });
        } else if (x < 0.52) {
          out = await recorded(client, id, "update", {
            compares: [{ key, target: "mod", op: "==", value: mods.get(key) ?? 0 }],
            success: [{ type: "put", key, value }],
            failure: [{ type: "range", key }],
          });
          if (out?.succeeded === true) mods.set(key, out.revision);
        } else if (x < 0.62) {
          const others = w.keys.filter((k) => k !== key);
          const a = pick(others);
          const b = pick(others.filter((k) => k !== a));
          out = await recorded(client, id, "multi", {
            compares: [{ key, target: "version", op: r() < 0.5 ? ">" : "<", value: randInt(r, 3) }],
            success: [
              { type: "put", key: a, value },
              { type: "put", key: b, value },
            ],
            failure: [{ type: "range", key }],
          });
        } else if (x < 0.72) {
          out = await recorded(client, id, "put", {
            compares: [],
            success: [{ type: "put", key, value }],
            failure: [],
          });
        } else if (x < 0.78) {
          const whole = r() < 0.2;
          out = await recorded(client, id, "delete", {
            compares: [],
            success: [whole ? { ...all, type: "delete" } : { type: "delete", key }],
            failure: [],
          });
        } else if (x < 0.99 || id !== 0) {
          await readAt(client, id, r() < 0.5 ? { key } : { key: w.range.key, end: w.range.end });
        } else {
          await compact(client, id);
        }
        learn(out);
        // After a failure, a pause: a member down answers at once.
        if (failed[id] !== failures) await sleep(20);
      }
    } finally {
      for (const c of clients) c.close();
    }
  };

  /** A Range at a revision answered earlier: recent ones mostly, any one sometimes. */
  const readAt = async (
    client: EtcdGrpcClient,
    id: number,
    scope: { key: string; end?: string },
  ) => {
    if (seen.length === 0) return;
    const from = r() < 0.7 ? Math.max(0, seen.length - 50) : 0;
    const revision = seen[from + randInt(r, seen.length - from)]!;
    const call = w.now();
    result.ops++;
    let answer: RevisionRead["answer"];
    try {
      answer = (await rangeAt(client, scope.key, scope.end, revision)).kvs;
      result.completed++;
    } catch (err) {
      if (!isCompacted(err)) {
        fail(id, "read-at", err);
        return;
      }
      answer = "compacted";
    }
    result.count(result.kinds, answer === "compacted" ? "read-at compacted" : "read-at ok");
    result.revisionReads.push({ client: id, ...scope, revision, call, return: w.now(), answer });
  };

  /** A Compact to a revision some way back (not physical: the log applies it alike). */
  const compact = async (client: EtcdGrpcClient, id: number) => {
    const newest = seen.reduce((a, b) => Math.max(a, b), 0);
    const revision = newest - 40;
    if (revision <= lastCompact) return;
    lastCompact = revision;
    const call = w.now();
    result.ops++;
    try {
      await client.compact({ revision: BigInt(revision) });
      result.completed++;
      result.count(result.kinds, "compact ok");
      result.compactions.push({ revision, call, return: w.now(), acknowledged: true });
    } catch (err) {
      if (isCompacted(err)) return;
      if (fail(id, "compact", err).nothingDone) return;
      result.compactions.push({
        revision,
        call,
        return: Number.POSITIVE_INFINITY,
        acknowledged: false,
      });
    }
  };

  await Promise.all(Array.from({ length: w.clients }, (_, id) => loop(id)));
  return result;
}

/**
 * The final linearizable read of `range` after healing, through the first of `endpoints`
 * that answers (retried for up to 30 s), recorded in `result`'s history as client 1000;
 * resolves with its answer.
 */
export async function finalRangeRead(
  endpoints: readonly string[],
  range: { readonly key: string; readonly end: string },
  result: EtcdWorkloadResult,
  now: () => number,
): Promise<TxnOutput> {
  const input: TxnInput = {
    compares: [],
    success: [{ type: "range", key: range.key, end: range.end }],
    failure: [],
  };
  const clients = endpoints.map((a) => new EtcdGrpcClient(a, {}, 5000));
  try {
    const until = Date.now() + 30_000;
    for (;;) {
      const call = now();
      try {
        const output = await sendTxnInput(clients[0]!, input);
        result.history.push({ client: 1000, input, output, call, return: now() });
        return output;
      } catch (err) {
        if (Date.now() > until)
          throw new Error("no final linearizable read within 30 s", { cause: err });
        clients.push(clients.shift()!);
        await sleep(10);
      }
    }
  } finally {
    for (const c of clients) c.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
