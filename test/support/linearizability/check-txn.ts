/**
 * The linearizability checker for histories of multi-key transactions with revisions
 * (txn-model.ts): is there a total order of the operations, consistent with their
 * real-time order, in which every answer (each branch taken, each key read with its
 * revisions and version, each header revision) is the model's? The revision is global,
 * so the history is searched whole (no split by key): keep the key set and the
 * concurrency small. Unknown outcomes and unknown reads as in check.ts.
 */
import type { CheckOptions } from "./check.js";
import { ILLEGAL } from "./kv-model.js";
import { searchHistory, type TimedOperation } from "./search.js";
import {
  EMPTY_TXN_STATE,
  runTxn,
  type TxnInput,
  type TxnOp,
  type TxnOutput,
  type TxnState,
  txnStateId,
  txnStep,
} from "./txn-model.js";

export interface TxnOperation extends TimedOperation<TxnInput, TxnOutput> {
  readonly client: number;
}

export interface TxnCheckResult {
  readonly verdict: "ok" | "violation" | "unknown";
  /** Set iff the verdict is "violation": where every order fails. */
  readonly explanation?: string;
  readonly operations: number;
  readonly steps: number;
}

const SHOWN = 6;

function formatOps(ops: readonly TxnOp[]): string {
  return ops
    .map((o) => {
      const range =
        o.type === "put"
          ? ""
          : o.end === undefined || o.end === ""
            ? ""
            : `..${JSON.stringify(o.end)}`;
      return o.type === "put"
        ? `put ${JSON.stringify(o.key)}=${JSON.stringify(o.value)}`
        : `${o.type} ${JSON.stringify(o.key)}${range}`;
    })
    .join(", ");
}

/** E.g. `#4 client 1 txn [mod "a" == 3] then [put "a"="x"] else [range "a"]: rev 5 succeeded [10, 12]`. */
export function formatTxnOperation(op: TxnOperation, position: number): string {
  const { compares, success, failure } = op.input;
  const call =
    compares.length === 0 && failure.length === 0
      ? formatOps(success)
      : `txn [${compares.map((c) => `${c.target} ${JSON.stringify(c.key)} ${c.op} ${JSON.stringify(c.value)}`).join(", ")}] then [${formatOps(success)}] else [${formatOps(failure)}]`;
  const out = op.output;
  const answer =
    out === undefined
      ? "unknown (may or may not have taken effect)"
      : `rev ${out.revision}${compares.length > 0 ? (out.succeeded ? " succeeded" : " failed") : ""} ${JSON.stringify(out.results)}`;
  const ret = op.return === Number.POSITIVE_INFINITY ? "inf" : String(op.return);
  return `#${position} client ${op.client} ${call}: ${answer} [${op.call}, ${ret}]`;
}

function isRead(input: TxnInput): boolean {
  return [...input.success, ...input.failure].every((o) => o.type === "range");
}

/** Checks `history` from `initial` (default: an empty store at revision 1, as etcd starts). */
export function checkTxnLinearizability(
  history: readonly TxnOperation[],
  options: CheckOptions & { readonly initial?: TxnState } = {},
): TxnCheckResult {
  const positions: number[] = [];
  for (let p = 0; p < history.length; p++) {
    const op = history[p]!;
    if (op.output === undefined && isRead(op.input)) continue;
    positions.push(p);
  }
  const ops = positions.map((p) => history[p]!);
  const result = searchHistory(
    ops,
    options.initial ?? EMPTY_TXN_STATE,
    { step: txnStep, id: txnStateId },
    {
      deadline: performance.now() + (options.timeoutMs ?? 10_000),
      maxSteps: options.maxSteps ?? 100_000_000,
    },
  );
  if (result.kind !== "violation") {
    return { verdict: result.kind, operations: history.length, steps: result.steps };
  }
  const { deepest } = result;
  const blockedPos = positions[deepest.blocked]!;
  const blocked = history[blockedPos]!;
  const placed = new Set(deepest.linearized);
  const lines = [
    `not linearizable: no order of the ${ops.length} operations explains ${formatTxnOperation(blocked, blockedPos)}.`,
    `The longest consistent order found places ${deepest.linearized.length}, leaving revision ${deepest.state.revision} and ${txnStateId(deepest.state).split("\u0002").slice(1).join(", ").replaceAll("\u0001", " ") || "no keys"}; it ends with:`,
    ...deepest.linearized
      .slice(-SHOWN)
      .map((i) => `    ${formatTxnOperation(ops[i]!, positions[i]!)}`),
    "Not placed, and invoked before it returned (the candidates for the next place):",
  ];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (placed.has(i) || op.call > blocked.return) continue;
    const fits = txnStep(deepest.state, op.input, op.output) !== ILLEGAL;
    const model = runTxn(deepest.state, op.input).output;
    lines.push(
      `    ${formatTxnOperation(op, positions[i]!)}: ${fits ? "fits" : `the model answers rev ${model.revision} ${JSON.stringify(model.results)}`}`,
    );
  }
  return {
    verdict: "violation",
    explanation: lines.join("\n"),
    operations: history.length,
    steps: result.steps,
  };
}

/** Throws with the explanation iff `history` is not linearizable (or undecided). */
export function assertTxnLinearizable(
  history: readonly TxnOperation[],
  context: string,
  options: CheckOptions = {},
): TxnCheckResult {
  const r = checkTxnLinearizability(history, options);
  if (r.verdict === "violation") throw new Error(`${context}: ${r.explanation}`);
  if (r.verdict === "unknown")
    throw new Error(`${context}: linearizability undecided within the budget`);
  return r;
}

/** For building histories: what a correct store answers to `input` after `state`. */
export function answer(state: TxnState, input: TxnInput): { state: TxnState; output: TxnOutput } {
  return runTxn(state, input);
}
