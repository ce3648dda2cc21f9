/**
 * The search for a linearization of a history against a sequential model (the operations
 * on one key against a register, or a whole history of transactions against a
 * multi-version store): Wing & Gong's
 * backtracking over the history's call and return events, with Lowe's memo (a set of
 * (linearized operations, register state) pairs already explored, so that no
 * configuration is searched twice). After G. Lowe, "Testing for linearizability" (2017),
 * and porcupine's checker; our own code.
 *
 * Events sit in a doubly linked list ordered by time (at equal times calls come first:
 * operations whose intervals only touch are concurrent). Walking it from the head, a call
 * is an operation that may take effect now: if the model accepts it and the resulting
 * configuration is new, it is linearized (its call and return leave the list) and the
 * walk restarts. Reaching a return means its operation should already have taken effect:
 * the last choice is undone. An operation with an unknown outcome returns at Infinity,
 * after every known return, so the search succeeds once every known operation is placed.
 */
import { rng } from "../random.js";
import { ILLEGAL, type KvState, kvStep } from "./kv-model.js";
import type { KvInput, KvOperation, KvOutput } from "./operation.js";

/** An operation of a history: what was asked, what was answered, when (operation.ts). */
export interface TimedOperation<I, O> {
  readonly input: I;
  /** Undefined iff the outcome is unknown (then `return` is Infinity). */
  readonly output: O | undefined;
  readonly call: number;
  readonly return: number;
}

/** A sequential specification. */
export interface Model<S, I, O> {
  /** The state after `input` takes effect in `state`, or ILLEGAL iff `output` could not be its answer there. */
  step(state: S, input: I, output: O | undefined): S | typeof ILLEGAL;
  /** A value equal for equal states (Map keys compare with SameValueZero). */
  id(state: S): unknown;
}

const REGISTER: Model<KvState, KvInput, KvOutput> = { step: kvStep, id: (s) => s };

/** Where the search stops trying: whichever comes first. */
export interface SearchBudget {
  /** performance.now() value after which the search gives up. */
  readonly deadline: number;
  /** Steps (events visited) after which the search gives up. */
  readonly maxSteps: number;
}

/** The deepest point the search reached: the basis of a failure's explanation. */
export interface DeepestPoint<S = KvState> {
  /** Indexes (into the searched operations) linearized, in linearization order. */
  readonly linearized: readonly number[];
  /** The model's state after them. */
  readonly state: S;
  /** The operation whose return was reached without it (or anything else) taking effect. */
  readonly blocked: number;
}

export type SearchResult<S = KvState> =
  | { readonly kind: "ok"; readonly steps: number }
  | { readonly kind: "violation"; readonly steps: number; readonly deepest: DeepestPoint<S> }
  | { readonly kind: "unknown"; readonly steps: number };

interface MemoEntry {
  readonly check: number;
  readonly state: number;
  readonly bits: Uint32Array;
}

const BUDGET_CHECK_INTERVAL = 1024;

/**
 * Searches for a linearization of `ops` (all on one key) starting from `initial`.
 * REQUIRES: every op is valid (validateOperation), and unknown reads were left out (they
 * constrain nothing).
 */
export function searchKey(
  ops: readonly KvOperation[],
  initial: KvState,
  budget: SearchBudget,
): SearchResult {
  return searchHistory(ops, initial, REGISTER, budget);
}

/**
 * Searches for a linearization of `ops` against `model` starting from `initial`.
 * REQUIRES: every op is valid, and unknown reads were left out (they constrain nothing).
 */
export function searchHistory<S, I, O>(
  ops: readonly TimedOperation<I, O>[],
  initial: S,
  model: Model<S, I, O>,
  budget: SearchBudget,
): SearchResult<S> {
  const n = ops.length;
  const HEAD = 2 * n;
  const TAIL = 2 * n + 1;
  // Event e belongs to operation e >> 1; even events are calls, odd ones returns.
  const order: number[] = [];
  for (let e = 0; e < 2 * n; e++) order.push(e);
  const time = (e: number): number => (e & 1 ? ops[e >> 1]!.return : ops[e >> 1]!.call);
  order.sort((a, b) => time(a) - time(b) || (a & 1) - (b & 1) || a - b);
  const next = new Int32Array(2 * n + 2);
  const prev = new Int32Array(2 * n + 2);
  let last = HEAD;
  for (const e of order) {
    next[last] = e;
    prev[e] = last;
    last = e;
  }
  next[last] = TAIL;
  prev[TAIL] = last;
  const remove = (e: number): void => {
    next[prev[e]!] = next[e]!;
    prev[next[e]!] = prev[e]!;
  };
  const restore = (e: number): void => {
    next[prev[e]!] = e;
    prev[next[e]!] = e;
  };

  let known = 0;
  for (const op of ops) if (op.output !== undefined) known++;

  // Lowe's memo: the linearized set as a bitset, hashed incrementally by XOR of a random
  // word per operation (two words: one picks the bucket, one checks), plus the state's id.
  const random = rng(0x5eed ^ n);
  const zBucket = new Uint32Array(n);
  const zCheck = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    zBucket[i] = (random() * 2 ** 32) >>> 0;
    zCheck[i] = (random() * 2 ** 32) >>> 0;
  }
  const bits = new Uint32Array((n + 31) >>> 5);
  let hBucket = 0;
  let hCheck = 0;
  const stateIds = new Map<unknown, number>();
  const memo = new Map<number, MemoEntry[]>();
  const toggle = (i: number): void => {
    bits[i >>> 5]! ^= 1 << (i & 31);
    hBucket ^= zBucket[i]!;
    hCheck ^= zCheck[i]!;
  };
  /** Adds the current (bits, state) to the memo; false iff it was there already. */
  const remember = (state: S): boolean => {
    const key = model.id(state);
    let id = stateIds.get(key);
    if (id === undefined) {
      id = stateIds.size;
      stateIds.set(key, id);
    }
    const bucketKey = (hBucket ^ Math.imul(id + 1, 0x9e3779b1)) >>> 0;
    let bucket = memo.get(bucketKey);
    if (bucket === undefined) {
      bucket = [];
      memo.set(bucketKey, bucket);
    } else {
      for (const m of bucket) {
        if (m.check === hCheck && m.state === id && sameBits(m.bits, bits)) return false;
      }
    }
    bucket.push({ check: hCheck, state: id, bits: bits.slice() });
    return true;
  };

  const stack: number[] = []; // call events linearized, in order
  const states: S[] = []; // the state before each of them
  let state = initial;
  let linearizedKnown = 0;
  let deepest: DeepestPoint<S> | undefined;
  let steps = 0;
  let entry = next[HEAD]!;
  for (;;) {
    if (linearizedKnown === known) return { kind: "ok", steps };
    steps++;
    if (steps % BUDGET_CHECK_INTERVAL === 0) {
      if (steps >= budget.maxSteps || performance.now() > budget.deadline) {
        return { kind: "unknown", steps };
      }
    }
    const i = entry >> 1;
    const op = ops[i]!;
    if ((entry & 1) === 0) {
      const after = model.step(state, op.input, op.output);
      if (after !== ILLEGAL) {
        toggle(i);
        if (remember(after)) {
          stack.push(entry);
          states.push(state);
          state = after;
          if (op.output !== undefined) linearizedKnown++;
          remove(entry);
          remove(entry + 1);
          entry = next[HEAD]!;
          continue;
        }
        toggle(i);
      }
      entry = next[entry]!;
      continue;
    }
    // A return: operation i should have taken effect by now.
    if (deepest === undefined || stack.length > deepest.linearized.length) {
      deepest = { linearized: stack.map((e) => e >> 1), state, blocked: i };
    }
    const undone = stack.pop();
    if (undone === undefined) return { kind: "violation", steps, deepest };
    const j = undone >> 1;
    state = states.pop()!;
    toggle(j);
    if (ops[j]!.output !== undefined) linearizedKnown--;
    restore(undone + 1);
    restore(undone);
    entry = next[undone]!;
  }
}

function sameBits(a: Uint32Array, b: Uint32Array): boolean {
  for (let w = 0; w < a.length; w++) if (a[w] !== b[w]) return false;
  return true;
}
