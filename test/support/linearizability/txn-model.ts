/**
 * The sequential specification of a multi-version store with transactions (etcd's KV
 * service: src/mvcc/, the etcd API), for histories over a few keys: the whole key set is
 * one state, so a transaction over several keys is one step; the store revision is part
 * of the state, so every response's header revision and every returned key's create and
 * mod revision and version must be what that order of operations gives.
 *
 * A plain Range, Put or DeleteRange is recorded as a transaction without compares whose
 * success branch is that one operation.
 */
import { ILLEGAL } from "./kv-model.js";

/** A live key in the model. */
export interface TxnVersion {
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
}

export interface TxnState {
  readonly revision: number;
  /** The live keys. */
  readonly kvs: ReadonlyMap<string, TxnVersion>;
}

export const EMPTY_TXN_STATE: TxnState = { revision: 1, kvs: new Map() };

/** etcd's compare: every key of [key, end) (end "": key alone) must satisfy it. */
export interface TxnCompare {
  readonly key: string;
  readonly end?: string;
  readonly target: "value" | "version" | "create" | "mod";
  readonly op: "==" | "!=" | "<" | ">";
  readonly value: string | number;
}

export type TxnOp =
  /** The live keys of [key, end) (end "" or absent: key alone), in key order. */
  | { readonly type: "range"; readonly key: string; readonly end?: string }
  | { readonly type: "put"; readonly key: string; readonly value: string }
  | { readonly type: "delete"; readonly key: string; readonly end?: string };

export interface TxnInput {
  readonly compares: readonly TxnCompare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

export interface TxnKv extends TxnVersion {
  readonly key: string;
}

export type TxnOpResult =
  | { readonly type: "range"; readonly kvs: readonly TxnKv[] }
  | { readonly type: "put" }
  | { readonly type: "delete"; readonly deleted: number };

export interface TxnOutput {
  /** The response header's revision. */
  readonly revision: number;
  readonly succeeded: boolean;
  readonly results: readonly TxnOpResult[];
}

function inRange(k: string, key: string, end: string | undefined): boolean {
  if (end === undefined || end === "") return k === key;
  if (end === "\0") return k >= key;
  return k >= key && k < end;
}

function keysOf(kvs: ReadonlyMap<string, TxnVersion>, key: string, end?: string): string[] {
  return [...kvs.keys()].filter((k) => inRange(k, key, end)).sort();
}

function holds(v: TxnVersion | undefined, c: TxnCompare): boolean {
  let a: string | number;
  if (c.target === "value") {
    if (v === undefined) return false;
    a = v.value;
  } else if (c.target === "version") a = v?.version ?? 0;
  else if (c.target === "create") a = v?.createRevision ?? 0;
  else a = v?.modRevision ?? 0;
  const b = c.value;
  switch (c.op) {
    case "==":
      return a === b;
    case "!=":
      return a !== b;
    case "<":
      return a < b;
    case ">":
      return a > b;
  }
}

/** True iff every compare holds in `kvs` (a range compare: every live key of it). */
export function comparesHold(
  kvs: ReadonlyMap<string, TxnVersion>,
  compares: readonly TxnCompare[],
): boolean {
  for (const c of compares) {
    if (c.end === undefined || c.end === "") {
      if (!holds(kvs.get(c.key), c)) return false;
    } else {
      for (const k of keysOf(kvs, c.key, c.end)) if (!holds(kvs.get(k), c)) return false;
    }
  }
  return true;
}

/** Runs `input` on `state`: the new state and what a correct store answers. */
export function runTxn(state: TxnState, input: TxnInput): { state: TxnState; output: TxnOutput } {
  const succeeded = comparesHold(state.kvs, input.compares);
  const kvs = new Map(state.kvs);
  const rev = state.revision + 1;
  let changed = false;
  const results: TxnOpResult[] = [];
  for (const op of succeeded ? input.success : input.failure) {
    if (op.type === "range") {
      results.push({
        type: "range",
        kvs: keysOf(kvs, op.key, op.end).map((k) => ({ key: k, ...kvs.get(k)! })),
      });
    } else if (op.type === "put") {
      const prev = kvs.get(op.key);
      kvs.set(op.key, {
        value: op.value,
        createRevision: prev?.createRevision ?? rev,
        modRevision: rev,
        version: (prev?.version ?? 0) + 1,
      });
      changed = true;
      results.push({ type: "put" });
    } else {
      const gone = keysOf(kvs, op.key, op.end);
      for (const k of gone) kvs.delete(k);
      if (gone.length > 0) changed = true;
      results.push({ type: "delete", deleted: gone.length });
    }
  }
  const revision = changed ? rev : state.revision;
  return {
    state: changed ? { revision, kvs } : state,
    output: { revision, succeeded, results },
  };
}

function sameResult(a: TxnOpResult, b: TxnOpResult): boolean {
  if (a.type !== b.type) return false;
  if (a.type === "delete") return a.deleted === (b as typeof a).deleted;
  if (a.type === "put") return true;
  const bk = (b as typeof a).kvs;
  if (a.kvs.length !== bk.length) return false;
  return a.kvs.every((x, i) => {
    const y = bk[i]!;
    return (
      x.key === y.key &&
      x.value === y.value &&
      x.createRevision === y.createRevision &&
      x.modRevision === y.modRevision &&
      x.version === y.version
    );
  });
}

/** True iff `a` and `b` are the same answer. */
export function sameTxnOutput(a: TxnOutput, b: TxnOutput): boolean {
  return (
    a.revision === b.revision &&
    a.succeeded === b.succeeded &&
    a.results.length === b.results.length &&
    a.results.every((r, i) => sameResult(r, b.results[i]!))
  );
}

/** The model's step (search.ts's Model): ILLEGAL iff the recorded answer is not the model's. */
export function txnStep(
  state: TxnState,
  input: TxnInput,
  output: TxnOutput | undefined,
): TxnState | typeof ILLEGAL {
  const run = runTxn(state, input);
  if (output !== undefined && !sameTxnOutput(run.output, output)) return ILLEGAL;
  return run.state;
}

/** A canonical identity of a state (for the search's memo). */
export function txnStateId(state: TxnState): string {
  const parts = [String(state.revision)];
  for (const k of [...state.kvs.keys()].sort()) {
    const v = state.kvs.get(k)!;
    parts.push(`${k}\u0001${v.value}\u0001${v.createRevision}.${v.modRevision}.${v.version}`);
  }
  return parts.join("\u0002");
}
