/**
 * Proposals waiting for their entry to be applied here. Each proposal gets a request ID,
 * unique for this member's life and beyond a restart (a random 32-bit base, then a
 * counter), which its entry carries with the member's ID: when the apply path applies an
 * entry this member proposed, it settles the waiter with the apply's result. A waiter
 * whose deadline or signal fires first is rejected with OUTCOME_UNKNOWN (the entry may
 * still commit and apply later: its result is then dropped), and so is one whose leader
 * (the member it was handed to: itself when it leads) is known to be gone (`failTo`:
 * the leader changed, stepped down, or its connection broke), at once rather than at
 * its deadline.
 *
 * The state machine settles the waiters as it applies (Settlement); a membership change
 * is settled only once Raft counts it applied (`advanced`), so that its proposer may
 * propose the next change at once.
 */
import type { AbortSignalLike } from "../db/commit-queue.js";
import { KvError } from "../errors.js";
import type { MemberId } from "./members.js";

interface Waiter {
  /** The leader the proposal was handed to (this member's ID when it led). */
  readonly to: MemberId;
  resolve(result: unknown): void;
  reject(err: unknown): void;
  timer: ReturnType<typeof setTimeout> | undefined;
  unlisten: (() => void) | undefined;
}

/** How the apply path answers this member's proposals. */
export interface Settlement {
  /** This member's proposal `request` was applied with `result` (or refused with `error`). */
  settle(request: number, result: unknown, error: unknown): void;
  /** `settle`, once Raft counts the entry applied (after advance): for membership changes. */
  settleAfterAdvance(request: number, result: unknown, error: unknown): void;
}

export class Proposals implements Settlement {
  private next: number;
  private readonly waiting = new Map<number, Waiter>();
  private afterAdvance: Array<() => void> = [];

  /** `base` seeds the request IDs (default: random). */
  constructor(base: number = Math.floor(Math.random() * 2 ** 32)) {
    this.next = base * 2 ** 16;
  }

  get size(): number {
    return this.waiting.size;
  }

  /**
   * Registers a waiter for a proposal handed to leader `to`; `promise` settles with the
   * apply's result, or rejects with OUTCOME_UNKNOWN after `timeoutMs`, when `signal`
   * fires, or at `failTo(to)`. The caller proposes the entry after this (and calls
   * `cancel` if proposing fails).
   */
  register<T>(
    timeoutMs: number,
    signal: AbortSignalLike | undefined,
    to: MemberId,
  ): { request: number; promise: Promise<T> } {
    const request = ++this.next;
    let w!: Waiter;
    const promise = new Promise<T>((resolve, reject) => {
      w = {
        to,
        resolve: resolve as (r: unknown) => void,
        reject,
        timer: undefined,
        unlisten: undefined,
      };
    });
    const expire = (why: string) => () => {
      if (this.take(request) === undefined) return;
      w.reject(
        new KvError(
          "OUTCOME_UNKNOWN",
          `outcome unknown: the write was sent to the leader but ${why} before it was applied: it may or may not take effect (read the key to find out)`,
        ),
      );
    };
    w.timer = setTimeout(expire(`the call's ${timeoutMs} ms ran out`), timeoutMs);
    if (signal !== undefined) {
      const onAbort = expire("the call was cancelled or its deadline passed");
      signal.addEventListener("abort", onAbort, { once: true });
      w.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    this.waiting.set(request, w);
    return { request, promise };
  }

  /** The entry carrying `request` was applied with `result`. */
  resolve(request: number, result: unknown): void {
    this.take(request)?.resolve(result);
  }

  /** The entry carrying `request` failed to apply (or was refused) with `err`. */
  reject(request: number, err: unknown): void {
    this.take(request)?.reject(err);
  }

  settle(request: number, result: unknown, error: unknown): void {
    if (error === undefined) this.resolve(request, result);
    else this.reject(request, error);
  }

  settleAfterAdvance(request: number, result: unknown, error: unknown): void {
    this.afterAdvance.push(() => this.settle(request, result, error));
  }

  /** Raft advanced: settles what `settleAfterAdvance` held back. */
  advanced(): void {
    const settle = this.afterAdvance;
    this.afterAdvance = [];
    for (const f of settle) f();
  }

  /** Forgets `request` (proposing it failed); its promise never settles. */
  cancel(request: number): void {
    this.take(request);
  }

  /**
   * Rejects every waiter whose proposal went to leader `to` with `err` (that leader is
   * gone: changed, stepped down, unreachable). Returns how many.
   */
  failTo(to: MemberId, err: unknown): number {
    let n = 0;
    for (const [request, w] of [...this.waiting]) {
      if (w.to !== to) continue;
      this.take(request);
      w.reject(err);
      n++;
    }
    return n;
  }

  /** Rejects every waiter with `err` (closing, failing). */
  rejectAll(err: unknown): void {
    for (const id of [...this.waiting.keys()]) this.take(id)?.reject(err);
  }

  private take(request: number): Waiter | undefined {
    const w = this.waiting.get(request);
    if (w === undefined) return undefined;
    this.waiting.delete(request);
    if (w.timer !== undefined) clearTimeout(w.timer);
    w.unlisten?.();
    return w;
  }
}
