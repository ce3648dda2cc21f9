/**
 * The vocabulary of a client history for the linearizability checker: one operation on
 * one key of a key-value store, with the time it was invoked and the time it completed.
 *
 * Values are strings (decode bytes before recording them: UTF-8 or hex); `undefined` is
 * the absence of a value. Times are numbers on any clock of the test, the same clock for
 * every operation of a history. An operation whose outcome is unknown (it timed out, the
 * connection broke, the node answered "maybe") may or may not have taken effect, at any
 * time after its invocation: it is recorded with `output: undefined` and
 * `return: Infinity`.
 */

/** What the client asked for. */
export type KvInput =
  | { readonly type: "get" }
  | { readonly type: "put"; readonly value: string }
  | { readonly type: "delete" }
  | {
      /**
       * Compare-and-swap: iff the key's value is `expected` (undefined: the key is
       * absent), set it to `next` (undefined: delete it).
       */
      readonly type: "cas";
      readonly expected: string | undefined;
      readonly next: string | undefined;
    };

/** What the store answered. */
export type KvOutput =
  | { readonly type: "get"; readonly value: string | undefined }
  | { readonly type: "put" }
  | { readonly type: "delete" }
  | {
      /**
       * `applied`: the comparison held and the swap took place; `current`: the key's value
       * once the operation took effect (the new value iff applied, else the value that
       * failed the comparison).
       */
      readonly type: "cas";
      readonly applied: boolean;
      readonly current: string | undefined;
    };

export interface KvOperation {
  /** Who issued it (for printing; the checker does not assume clients are sequential). */
  readonly client: number;
  readonly key: string;
  readonly input: KvInput;
  /** The answer, or undefined iff the outcome is unknown. */
  readonly output: KvOutput | undefined;
  /** When the client invoked it. */
  readonly call: number;
  /** When the client saw the answer; Infinity iff the outcome is unknown. */
  readonly return: number;
}

/** Throws a clear Error iff `op` is not a well-formed operation. */
export function validateOperation(op: KvOperation, position: number): void {
  const where = `operation ${position} (client ${op.client}, key ${JSON.stringify(op.key)})`;
  if (typeof op.key !== "string") throw new Error(`${where}: key must be a string`);
  if (!Number.isFinite(op.call)) throw new Error(`${where}: call time must be finite`);
  if (Number.isNaN(op.return) || op.return < op.call) {
    throw new Error(`${where}: return time ${op.return} is before call time ${op.call}`);
  }
  if (op.output === undefined) {
    if (op.return !== Number.POSITIVE_INFINITY) {
      throw new Error(`${where}: an unknown outcome must have return time Infinity`);
    }
    return;
  }
  if (op.return === Number.POSITIVE_INFINITY) {
    throw new Error(`${where}: a known outcome needs a finite return time`);
  }
  if (op.output.type !== op.input.type) {
    throw new Error(`${where}: output type ${op.output.type} answers input type ${op.input.type}`);
  }
}
