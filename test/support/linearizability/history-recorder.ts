/**
 * Records a client history as it happens, for checkLinearizability. Legal use per
 * operation: `invoke` once, then at most one of `complete` (the answer arrived),
 * `unknown` (it timed out or its outcome cannot be known: it may still take effect) or
 * `failed` (it certainly took no effect, e.g. refused before being proposed). An
 * operation still open when `operations()` is called counts as unknown.
 */
import type { KvInput, KvOperation, KvOutput } from "./operation.js";

interface Pending {
  readonly client: number;
  readonly key: string;
  readonly input: KvInput;
  readonly call: number;
  output: KvOutput | undefined;
  return: number;
  state: "open" | "done" | "failed";
}

export class HistoryRecorder {
  readonly #now: () => number;
  readonly #ops: Pending[] = [];

  /** `now` is the test's clock; it must never go backwards. */
  constructor(now: () => number) {
    this.#now = now;
  }

  /** Records an invocation; returns its handle. */
  invoke(client: number, key: string, input: KvInput): number {
    this.#ops.push({
      client,
      key,
      input,
      call: this.#now(),
      output: undefined,
      return: Number.POSITIVE_INFINITY,
      state: "open",
    });
    return this.#ops.length - 1;
  }

  /** Records the answer of operation `handle`. */
  complete(handle: number, output: KvOutput): void {
    const op = this.#open(handle);
    op.output = output;
    op.return = this.#now();
    op.state = "done";
  }

  /** Records that operation `handle`'s outcome is unknown: it may take effect, at any later time. */
  unknown(handle: number): void {
    this.#open(handle).state = "done";
  }

  /** Records that operation `handle` certainly took no effect: it leaves the history. */
  failed(handle: number): void {
    this.#open(handle).state = "failed";
  }

  /** The number of operations invoked so far. */
  get size(): number {
    return this.#ops.length;
  }

  /** The history so far. */
  operations(): KvOperation[] {
    const out: KvOperation[] = [];
    for (const op of this.#ops) {
      if (op.state === "failed") continue;
      out.push({
        client: op.client,
        key: op.key,
        input: op.input,
        output: op.output,
        call: op.call,
        return: op.return,
      });
    }
    return out;
  }

  #open(handle: number): Pending {
    const op = this.#ops[handle];
    if (op === undefined) throw new Error(`no operation ${handle}`);
    if (op.state !== "open") throw new Error(`operation ${handle} was already ${op.state}`);
    return op;
  }
}
