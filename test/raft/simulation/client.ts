/**
 * A simulated client: one operation at a time on a small key space, sent to a random
 * node; writes (put, delete, compare-and-swap) are proposed there (a follower forwards
 * them to the leader), reads go through ReadIndex. Each attempt has a timeout; a timed
 * out or refused attempt is retried on another node under the same request number (the
 * state machine's sessions apply a request at most once). Every operation is recorded in
 * the history (HistoryRecorder): answered ones with the answer, abandoned writes as
 * unknown (they may still take effect).
 */
import type { HistoryRecorder, KvInput, KvOutput } from "../../support/linearizability/index.js";
import { randInt } from "../../support/random.js";
import type { SimNetwork } from "./network.js";
import type { Scheduler } from "./scheduler.js";

export interface ClientRequest {
  readonly client: number;
  readonly request: number;
  readonly key: string;
  readonly input: KvInput;
}

export type ClientReply =
  | { readonly client: number; readonly request: number; readonly output: KvOutput }
  | { readonly client: number; readonly request: number; readonly error: string };

export interface ClientOptions {
  readonly keys: number;
  /** Virtual ms an attempt waits for its answer. */
  readonly attemptTimeout: number;
  /** Attempts per operation before it is abandoned. */
  readonly attempts: number;
  /** Virtual ms between operations: uniform in [0, thinkTime]. */
  readonly thinkTime: number;
}

export interface ClientEnv {
  readonly scheduler: Scheduler;
  readonly network: SimNetwork;
  readonly random: () => number;
  readonly recorder: HistoryRecorder;
  /** The nodes a client may contact now. */
  targets(): readonly number[];
  /** Delivers a request to node `to` (if it is up). */
  deliver(to: number, request: ClientRequest): void;
  /** False once the run stops issuing operations. */
  running(): boolean;
}

interface Current {
  readonly request: ClientRequest;
  readonly handle: number;
  attempt: number;
}

export class SimClient {
  #request = 0;
  #current: Current | undefined;
  /** Values this client last saw per key: CAS expectations that often hold. */
  readonly #seen = new Map<string, string | undefined>();
  readonly stats = { ok: 0, unknown: 0, retries: 0 };

  constructor(
    readonly id: number,
    private readonly env: ClientEnv,
    private readonly options: ClientOptions,
  ) {}

  start(): void {
    this.#scheduleNext();
  }

  /** An answer from a node (possibly to an earlier attempt, possibly a duplicate). */
  receive(reply: ClientReply): void {
    const c = this.#current;
    if (c === undefined || reply.request !== c.request.request) return;
    if ("error" in reply) {
      this.#retryLater(c, c.attempt);
      return;
    }
    this.#current = undefined;
    this.env.recorder.complete(c.handle, reply.output);
    this.stats.ok++;
    const out = reply.output;
    const input = c.request.input;
    if (out.type === "get") this.#seen.set(c.request.key, out.value);
    else if (out.type === "cas") this.#seen.set(c.request.key, out.current);
    else if (input.type === "put") this.#seen.set(c.request.key, input.value);
    else this.#seen.set(c.request.key, undefined);
    this.#scheduleNext();
  }

  #scheduleNext(): void {
    const { scheduler, random } = this.env;
    scheduler.after(randInt(random, this.options.thinkTime + 1), () => {
      if (this.env.running()) this.#issue();
    });
  }

  #issue(): void {
    const { random, recorder } = this.env;
    const key = `k${randInt(random, this.options.keys)}`;
    const value = `${this.id}.${this.#request + 1}`;
    const roll = random();
    let input: KvInput;
    if (roll < 0.4) input = { type: "get" };
    else if (roll < 0.7) input = { type: "put", value };
    else if (roll < 0.75) input = { type: "delete" };
    else {
      const expected =
        this.#seen.has(key) && random() < 0.8
          ? this.#seen.get(key)
          : random() < 0.5
            ? undefined
            : `${this.id}.0`;
      input = { type: "cas", expected, next: random() < 0.9 ? value : undefined };
    }
    const request: ClientRequest = { client: this.id, request: ++this.#request, key, input };
    const handle = recorder.invoke(this.id, key, input);
    this.#current = { request, handle, attempt: 0 };
    this.#attempt(this.#current);
  }

  #attempt(c: Current): void {
    const { scheduler, random } = this.env;
    const targets = this.env.targets();
    const attempt = ++c.attempt;
    if (targets.length > 0) {
      const to = targets[randInt(random, targets.length)]!;
      this.env.network.send(this.id, to, () => this.env.deliver(to, c.request));
    }
    scheduler.after(this.options.attemptTimeout, () => {
      if (this.#current === c && c.attempt === attempt) this.#retryOrAbandon(c);
    });
  }

  #retryLater(c: Current, attempt: number): void {
    // A refusal (no leader yet, back-pressure): try again soon, once per attempt.
    this.env.scheduler.after(5 + randInt(this.env.random, 20), () => {
      if (this.#current === c && c.attempt === attempt) this.#retryOrAbandon(c);
    });
  }

  #retryOrAbandon(c: Current): void {
    if (c.attempt < this.options.attempts && this.env.running()) {
      this.stats.retries++;
      this.#attempt(c);
      return;
    }
    this.#current = undefined;
    this.env.recorder.unknown(c.handle);
    this.stats.unknown++;
    this.#seen.delete(c.request.key);
    this.#scheduleNext();
  }
}
