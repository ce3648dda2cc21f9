/**
 * Client loops against a cluster of processes (KvClient over every endpoint), recording
 * every operation for the linearizability checker:
 *
 * - mixed clients issue linearizable gets, puts, deletes and compare-and-swaps on a small
 *   key set, and puts of write-once keys (`w/CLIENT/SEQ`) whose acknowledged values must
 *   all be found after healing;
 * - counter clients advance one counter key by read, then compare-and-swap from n to n+1;
 *   acknowledged increments and the maybe-applied ones are counted. An increment whose
 *   outcome stayed unknown is kept (KvClientError.unresolved, the client's session) and,
 *   after healing, `resolveUnresolved` sends it again with its session and sequence
 *   number until it is answered: applied once at most, it then counts as acknowledged or
 *   not, so that the counter can be checked exactly.
 *
 * Outcomes: an answer completes the operation; a read that failed says nothing (it leaves
 * the history); a write the server refused before proposing it (`notProposed`) or that
 * never left the client took no effect; any other failed write may or may not take effect
 * (recorded as unknown: a timed-out or OUTCOME_UNKNOWN write is "maybe"). Error codes
 * that the cluster should never answer to these calls (INVALID_ARGUMENT and the like)
 * are collected in `unexpected`.
 */
import { status } from "@grpc/grpc-js";
import type { KvClient } from "../../src/client/kv-client.js";
import {
  isKvClientError,
  type KvClientError,
  type UnresolvedWrite,
} from "../../src/client/kv-client-error.js";
import type { HistoryRecorder, KvInput, KvOutput } from "./linearizability/index.js";
import { randInt } from "./random.js";

/** Codes a loaded, faulty cluster may answer: anything else is a bug. */
const EXPECTED_CODES = new Set<number>([
  status.UNAVAILABLE,
  status.DEADLINE_EXCEEDED,
  status.CANCELLED,
  status.RESOURCE_EXHAUSTED,
  status.ABORTED,
  status.FAILED_PRECONDITION,
  status.INTERNAL,
  status.UNKNOWN,
]);

export interface WorkloadOptions {
  /** Mixed clients (each its own KvClient from `client()`). */
  readonly clients: number;
  /** Counter clients. */
  readonly counterClients: number;
  readonly keys: readonly string[];
  readonly counterKey: string;
  readonly random: () => number;
  /** The cluster's client endpoints. */
  readonly endpoints: readonly string[];
  /**
   * A new client over `endpoints` (tried in that order; the caller closes it). Each loop
   * holds one per rotation of the endpoint list and picks one at random per operation, so
   * that every member serves calls, not only the first one listed.
   */
  readonly client: (endpoints: readonly string[]) => KvClient;
  readonly stop: () => boolean;
  /** Deadline per call. */
  readonly timeoutMs: number;
}

export class WorkloadResult {
  ops = 0;
  completed = 0;
  /** "get UNAVAILABLE" -> count: how calls failed. */
  readonly errors = new Map<string, number>();
  readonly unexpected: string[] = [];
  /** Write-once keys: acknowledged (key -> value) and maybe written. */
  readonly acked = new Map<string, string>();
  readonly maybe = new Map<string, string>();
  /** Counter increments acknowledged as applied, and those of unknown outcome. */
  counterAcked = 0;
  counterMaybe = 0;
  /** Increments of unknown outcome that can be sent again (counted in counterMaybe). */
  readonly counterUnresolved: UnresolvedWrite[] = [];
  /** Of those, the ones resolved after healing. */
  counterResolved = 0;

  summary(): string {
    const errors = [...this.errors].map(([k, n]) => `${k} x${n}`).join(", ");
    return `${this.ops} operations, ${this.completed} answered; write-once keys ${this.acked.size} acknowledged, ${this.maybe.size} maybe; counter +${this.counterAcked} acknowledged, ${this.counterMaybe} maybe (${this.counterResolved} of them resolved by resending); errors: ${errors === "" ? "none" : errors}`;
  }
}

type Outcome =
  | { ok: true; output: KvOutput }
  | { ok: false; unknown: boolean; unresolved?: UnresolvedWrite | undefined };

/** Runs one operation through `kv`, recorded in `recorder`. */
async function recorded(
  kv: KvClient,
  recorder: HistoryRecorder,
  result: WorkloadResult,
  client: number,
  key: string,
  input: KvInput,
  timeoutMs: number,
): Promise<Outcome> {
  const h = recorder.invoke(client, key, input);
  const o = { timeoutMs };
  result.ops++;
  try {
    let output: KvOutput;
    switch (input.type) {
      case "get": {
        const v = await kv.get(key, o);
        output = { type: "get", value: v?.toString("utf8") };
        break;
      }
      case "put":
        await kv.put(key, input.value, o);
        output = { type: "put" };
        break;
      case "delete":
        await kv.delete(key, o);
        output = { type: "delete" };
        break;
      case "cas": {
        const r = await kv.compareAndSwap(key, input.expected, input.next, o);
        output = { type: "cas", applied: r.applied, current: r.current?.toString("utf8") };
        break;
      }
    }
    recorder.complete(h, output);
    result.completed++;
    return { ok: true, output };
  } catch (err) {
    const e = isKvClientError(err) ? err : undefined;
    const name = `${input.type} ${e === undefined ? "thrown" : describe(e)}`;
    result.errors.set(name, (result.errors.get(name) ?? 0) + 1);
    if (e === undefined || !EXPECTED_CODES.has(e.code)) {
      result.unexpected.push(`${name}: ${String(err)}`);
    }
    if (input.type === "get" || (e !== undefined && (e.notProposed || e.neverSent))) {
      recorder.failed(h);
      return { ok: false, unknown: false };
    }
    recorder.unknown(h);
    return { ok: false, unknown: true, unresolved: e?.unresolved };
  }
}

function describe(e: KvClientError): string {
  return e.serverCode === undefined ? e.codeName : `${e.codeName}/${e.serverCode}`;
}

/** Runs the clients until `stop()`; resolves once every loop ended. */
export async function runWorkload(
  w: WorkloadOptions,
  recorder: HistoryRecorder,
): Promise<WorkloadResult> {
  const result = new WorkloadResult();
  const r = w.random;
  const rotations = w.endpoints.map((_, i) => [
    ...w.endpoints.slice(i),
    ...w.endpoints.slice(0, i),
  ]);
  const clientsOf = () => rotations.map((list) => w.client(list));
  const mixed = Array.from({ length: w.clients }, async (_, client) => {
    const kvs = clientsOf();
    const lastSeen = new Map<string, string | undefined>();
    let seq = 0;
    while (!w.stop()) {
      const kv = kvs[randInt(r, kvs.length)]!;
      const key = w.keys[randInt(r, w.keys.length)]!;
      const x = r();
      const value = `${client}.${seq++}`;
      if (x < 0.15) {
        const once = `w/${client}/${seq}`;
        const out = await recorded(
          kv,
          recorder,
          result,
          client,
          once,
          { type: "put", value },
          w.timeoutMs,
        );
        if (out.ok) result.acked.set(once, value);
        else if (out.unknown) result.maybe.set(once, value);
        continue;
      }
      let input: KvInput;
      if (x < 0.5) input = { type: "get" };
      else if (x < 0.7) input = { type: "put", value };
      else if (x < 0.8) input = { type: "delete" };
      else
        input = { type: "cas", expected: lastSeen.get(key), next: r() < 0.2 ? undefined : value };
      const out = await recorded(kv, recorder, result, client, key, input, w.timeoutMs);
      if (out.ok) {
        const o = out.output;
        if (o.type === "get") lastSeen.set(key, o.value);
        else if (o.type === "cas") lastSeen.set(key, o.current);
        else if (input.type === "put") lastSeen.set(key, input.value);
        else lastSeen.set(key, undefined);
      } else {
        await sleep(20);
      }
    }
  });
  const counters = Array.from({ length: w.counterClients }, async (_, i) => {
    const client = w.clients + i;
    const kvs = clientsOf();
    while (!w.stop()) {
      const kv = kvs[randInt(r, kvs.length)]!;
      const read = await recorded(
        kv,
        recorder,
        result,
        client,
        w.counterKey,
        { type: "get" },
        w.timeoutMs,
      );
      if (!read.ok || read.output.type !== "get") {
        await sleep(20);
        continue;
      }
      const current = read.output.value;
      const next = String((current === undefined ? 0 : Number(current)) + 1);
      const cas = await recorded(
        kv,
        recorder,
        result,
        client,
        w.counterKey,
        { type: "cas", expected: current, next },
        w.timeoutMs,
      );
      if (cas.ok) {
        if (cas.output.type === "cas" && cas.output.applied) result.counterAcked++;
      } else if (cas.unknown) {
        result.counterMaybe++;
        if (cas.unresolved !== undefined) result.counterUnresolved.push(cas.unresolved);
      }
    }
  });
  await Promise.all([...mixed, ...counters]);
  return result;
}

/**
 * After healing: sends each increment of unknown outcome again with its session and
 * sequence number until it is answered (within `limitMs` in all), moving it from
 * counterMaybe to counterAcked when it applied (its first result, if it had), or out of
 * both when it did not.
 */
export async function resolveUnresolved(result: WorkloadResult, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  for (const write of result.counterUnresolved) {
    let pending: UnresolvedWrite | undefined = write;
    while (pending !== undefined && !pending.givenUp && Date.now() < until) {
      try {
        const r = (await pending.resend({ timeoutMs: 5000 })) as { applied: boolean };
        result.counterMaybe--;
        result.counterResolved++;
        if (r.applied) result.counterAcked++;
        pending = undefined;
      } catch (err) {
        pending = isKvClientError(err) ? (err.unresolved ?? pending) : pending;
        await sleep(100);
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
