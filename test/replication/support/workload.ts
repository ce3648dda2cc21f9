/**
 * Client workloads against an in-process cluster, recorded for the linearizability
 * checker: each client loop picks a running member and an operation, and records its
 * invocation and completion. A write refused before it was proposed (UNAVAILABLE,
 * RESOURCE_EXHAUSTED, CLOSED, FAILED_PRECONDITION) took no effect; one whose outcome is
 * unknown (OUTCOME_UNKNOWN) may take effect at any later time; a read that failed says
 * nothing. Any other error fails the test.
 */
import type { ClientSessionCall } from "../../../src/db/kv-backend.js";
import { isKvError } from "../../../src/errors.js";
import type { ReplicatedStore } from "../../../src/replication/replicated-store.js";
import type { HistoryRecorder, KvInput, KvOutput } from "../../support/linearizability/index.js";
import { randInt } from "../../support/random.js";
import { bytes, text } from "./test-cluster.js";

const NOT_DONE = new Set([
  "UNAVAILABLE",
  "RESOURCE_EXHAUSTED",
  "CLOSED",
  "FAILED_PRECONDITION",
  "ABORTED",
]);

export type Outcome = "ok" | "failed" | "unknown";

/** Runs one recorded operation against `s`; returns how it ended (and the output in `result`). */
export async function recordedOp(
  s: ReplicatedStore,
  recorder: HistoryRecorder,
  client: number,
  key: string,
  input: KvInput,
  options: { serializable?: boolean; timeoutMs?: number; session?: ClientSessionCall } = {},
  result: { output?: KvOutput } = {},
): Promise<Outcome> {
  const h = recorder.invoke(client, key, input);
  const k = bytes(key);
  const w = {
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.session === undefined ? {} : { session: options.session }),
  };
  try {
    let out: KvOutput;
    switch (input.type) {
      case "get": {
        const v = await s.get(k, { ...w, ...(options.serializable ? { serializable: true } : {}) });
        out = { type: "get", value: text(v) };
        break;
      }
      case "put":
        await s.put(k, bytes(input.value), w);
        out = { type: "put" };
        break;
      case "delete":
        await s.delete(k, w);
        out = { type: "delete" };
        break;
      case "cas": {
        const r = await s.compareAndSwap(
          k,
          input.expected === undefined ? undefined : bytes(input.expected),
          input.next === undefined ? undefined : bytes(input.next),
          w,
        );
        out = { type: "cas", applied: r.applied, current: text(r.current) };
        break;
      }
    }
    recorder.complete(h, out);
    result.output = out;
    return "ok";
  } catch (err) {
    if (isKvError(err, "OUTCOME_UNKNOWN")) {
      if (input.type === "get") recorder.failed(h);
      else recorder.unknown(h);
      return "unknown";
    }
    if (isKvError(err) && NOT_DONE.has(err.code)) {
      recorder.failed(h);
      return "failed";
    }
    throw err;
  }
}

export interface MixedWorkload {
  readonly clients: number;
  readonly keys: readonly string[];
  readonly random: () => number;
  /** Members to send to (called per operation). */
  readonly members: () => ReplicatedStore[];
  readonly stop: () => boolean;
  readonly timeoutMs?: number;
}

/** Clients issuing gets, puts, deletes and CASes with unique values until `stop()`. */
export async function runMixed(
  w: MixedWorkload,
  recorder: HistoryRecorder,
): Promise<{ ops: number }> {
  let ops = 0;
  await Promise.all(
    Array.from({ length: w.clients }, async (_, client) => {
      let seq = 0;
      while (!w.stop()) {
        const members = w.members();
        if (members.length === 0) {
          await new Promise((r) => setTimeout(r, 10));
          continue;
        }
        const s = members[randInt(w.random, members.length)]!;
        const key = w.keys[randInt(w.random, w.keys.length)]!;
        const r = w.random();
        const value = `${client}.${seq++}`;
        let input: KvInput;
        if (r < 0.4) input = { type: "get" };
        else if (r < 0.7) input = { type: "put", value };
        else if (r < 0.8) input = { type: "delete" };
        else {
          // Expect a value recently written by this client or absence: some succeed.
          const expected = w.random() < 0.3 ? undefined : `${client}.${Math.max(0, seq - 2)}`;
          input = { type: "cas", expected, next: value };
        }
        const outcome = await recordedOp(
          s,
          recorder,
          client,
          key,
          input,
          w.timeoutMs === undefined ? {} : { timeoutMs: w.timeoutMs },
        );
        ops++;
        if (outcome !== "ok") await new Promise((r) => setTimeout(r, 5));
      }
    }),
  );
  return { ops };
}
