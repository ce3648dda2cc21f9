/**
 * The sequential specification the checker holds a history to: one register per key,
 * absent at first, with get, put, delete and compare-and-swap (operation.ts).
 */
import type { KvInput, KvOutput } from "./operation.js";

/** A register's value; undefined when the key is absent. */
export type KvState = string | undefined;

/** Returned by `step` when the operation cannot have taken effect in the given state. */
export const ILLEGAL: unique symbol = Symbol("illegal");

/**
 * The state after `input` takes effect in `state`, or ILLEGAL iff the recorded `output`
 * is not what the register would answer there. An undefined output (unknown outcome)
 * accepts whatever the register would answer.
 */
export function kvStep(
  state: KvState,
  input: KvInput,
  output: KvOutput | undefined,
): KvState | typeof ILLEGAL {
  switch (input.type) {
    case "get":
      if (output?.type === "get" && output.value !== state) return ILLEGAL;
      return state;
    case "put":
      return input.value;
    case "delete":
      return undefined;
    case "cas": {
      const applies = state === input.expected;
      const after = applies ? input.next : state;
      if (output?.type === "cas" && (output.applied !== applies || output.current !== after)) {
        return ILLEGAL;
      }
      return after;
    }
  }
}
