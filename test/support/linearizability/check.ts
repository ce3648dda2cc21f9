/**
 * The linearizability checker for key-value histories: is there a total order of the
 * operations, consistent with their real-time order (A before B iff A returned strictly
 * before B was invoked), in which each answer is the one a sequential register per key
 * (kv-model.ts) would give? Linearizability is P-compositional (Herlihy & Wing): a
 * history is linearizable iff its restriction to each key is, so each key is searched
 * on its own (search.ts).
 *
 * Operations with an unknown outcome may take effect at any time after their invocation
 * or never; unknown reads constrain nothing and are left out. The search is bounded: when
 * it runs out of time or steps on some key (and finds no violation elsewhere), the
 * verdict is "unknown", never a hang.
 */

import { formatOperation, formatValue } from "./format.js";
import { ILLEGAL, kvStep } from "./kv-model.js";
import { type KvOperation, validateOperation } from "./operation.js";
import { type DeepestPoint, searchKey } from "./search.js";

export interface CheckOptions {
  /** Wall-clock budget for the whole history, in milliseconds (default 10,000). */
  readonly timeoutMs?: number;
  /** Step budget for the whole history (default 100,000,000). */
  readonly maxSteps?: number;
}

export interface Violation {
  readonly key: string;
  /** The operations the explanation names, as [position in the history, operation]. */
  readonly operations: readonly (readonly [number, KvOperation])[];
  /** A legible account of where every ordering fails. */
  readonly explanation: string;
}

export interface CheckResult {
  readonly verdict: "ok" | "violation" | "unknown";
  /** Set iff the verdict is "violation". */
  readonly violation?: Violation;
  /** Keys the budget ran out on (the verdict is "unknown" iff non-empty and no violation). */
  readonly undecidedKeys: readonly string[];
  readonly keys: number;
  readonly operations: number;
  readonly steps: number;
}

const PREFIX_SHOWN = 4;
const PENDING_SHOWN = 8;

/** Checks `history`. Throws a clear Error, checking nothing, iff an operation is malformed. */
export function checkLinearizability(
  history: readonly KvOperation[],
  options: CheckOptions = {},
): CheckResult {
  history.forEach(validateOperation);
  const byKey = new Map<string, number[]>();
  for (let p = 0; p < history.length; p++) {
    const op = history[p]!;
    if (op.output === undefined && op.input.type === "get") continue;
    let positions = byKey.get(op.key);
    if (positions === undefined) {
      positions = [];
      byKey.set(op.key, positions);
    }
    positions.push(p);
  }
  const deadline = performance.now() + (options.timeoutMs ?? 10_000);
  let stepsLeft = options.maxSteps ?? 100_000_000;
  let steps = 0;
  const undecidedKeys: string[] = [];
  for (const [key, positions] of byKey) {
    const ops = positions.map((p) => history[p]!);
    const result = searchKey(ops, undefined, { deadline, maxSteps: stepsLeft });
    steps += result.steps;
    stepsLeft = Math.max(0, stepsLeft - result.steps);
    if (result.kind === "violation") {
      return {
        verdict: "violation",
        violation: explain(history, key, positions, result.deepest),
        undecidedKeys,
        keys: byKey.size,
        operations: history.length,
        steps,
      };
    }
    if (result.kind === "unknown") undecidedKeys.push(key);
  }
  return {
    verdict: undecidedKeys.length === 0 ? "ok" : "unknown",
    undecidedKeys,
    keys: byKey.size,
    operations: history.length,
    steps,
  };
}

/**
 * Throws an Error carrying the explanation iff `history` is not linearizable, or, unless
 * `allowUnknown`, if the checker could not decide. `context` (a seed, the options) leads
 * the message so that a failure says how to replay it.
 */
export function assertLinearizable(
  history: readonly KvOperation[],
  context: string,
  options: CheckOptions & { readonly allowUnknown?: boolean } = {},
): CheckResult {
  const result = checkLinearizability(history, options);
  if (result.verdict === "violation") {
    throw new Error(`${context}: ${result.violation!.explanation}`);
  }
  if (result.verdict === "unknown" && options.allowUnknown !== true) {
    throw new Error(
      `${context}: linearizability undecided within the budget on keys ${result.undecidedKeys.join(", ")}`,
    );
  }
  return result;
}

function explain(
  history: readonly KvOperation[],
  key: string,
  positions: readonly number[],
  deepest: DeepestPoint,
): Violation {
  const blockedPos = positions[deepest.blocked]!;
  const blocked = history[blockedPos]!;
  const placed = new Set(deepest.linearized);
  const prefix = deepest.linearized.slice(-PREFIX_SHOWN).map((i) => positions[i]!);
  const pending: number[] = [];
  for (let i = 0; i < positions.length; i++) {
    const op = history[positions[i]!]!;
    if (!placed.has(i) && op.call <= blocked.return) pending.push(positions[i]!);
  }
  pending.sort((a, b) => history[a]!.call - history[b]!.call || a - b);
  const lines = [
    `not linearizable on key ${JSON.stringify(key)} (${positions.length} operations on it):`,
    `no order of them explains ${formatOperation(blocked, blockedPos)}.`,
    `The longest consistent order found places ${deepest.linearized.length} of them, leaving the value ${formatValue(deepest.state)}${prefix.length > 0 ? "; it ends with:" : "."}`,
    ...prefix.map((p) => `    ${formatOperation(history[p]!, p)}`),
    `Not placed, and invoked before #${blockedPos} returned (the candidates for the next place):`,
    ...pending.slice(0, PENDING_SHOWN).map((p) => {
      const op = history[p]!;
      const after = kvStep(deepest.state, op.input, op.output);
      const note =
        after === ILLEGAL
          ? `cannot take effect on ${formatValue(deepest.state)}`
          : `would leave ${formatValue(after)}`;
      return `    ${formatOperation(op, p)}: ${note}`;
    }),
  ];
  if (pending.length > PENDING_SHOWN)
    lines.push(`    ... and ${pending.length - PENDING_SHOWN} more`);
  const named = new Set([...prefix, ...pending.slice(0, PENDING_SHOWN)]);
  return {
    key,
    operations: [...named].sort((a, b) => a - b).map((p) => [p, history[p]!] as const),
    explanation: lines.join("\n"),
  };
}
