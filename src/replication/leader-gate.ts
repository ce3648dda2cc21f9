/**
 * Writes held until this member can hand them to a leader (docs/cluster.md, "Failover"):
 * while it knows no leader, or knows one its transport cannot reach (the connection was
 * refused or lost: a leader that died and is not yet replaced), a new write waits here
 * instead of failing at once or being sent into the void. It goes on as soon as a
 * reachable leader is known (`check`, called on every leader change and every tick), and
 * fails as not proposed (the error `expired` makes: nothing was done, safe to retry) when
 * that takes longer than its limit, about one election timeout.
 */
import type { AbortSignalLike } from "../db/commit-queue.js";
import { KvError } from "../errors.js";

interface Held {
  release(): void;
  fail(err: unknown): void;
}

export class LeaderGate {
  private readonly held = new Set<Held>();

  /** `ready()`: true iff a write can be handed to a leader now. */
  constructor(private readonly ready: () => boolean) {}

  /** Writes waiting. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Resolves once `ready()` (at once if it is now). Rejects with `expired()` after
   * `limitMs`, or ABORTED when `signal` fires first (nothing was proposed either way).
   */
  wait(
    limitMs: number,
    signal: AbortSignalLike | undefined,
    expired: () => KvError,
  ): Promise<void> {
    if (this.ready()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.held.delete(h);
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const h: Held = {
        release: () => {
          done();
          resolve();
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      const onAbort = () =>
        h.fail(
          new KvError(
            "ABORTED",
            "not proposed: the call ended (its deadline or a cancellation) while this member waited for a leader; nothing was done, safe to retry",
          ),
        );
      const timer = setTimeout(() => h.fail(expired()), Math.max(0, limitMs));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.held.add(h);
    });
  }

  /** Releases every held write if `ready()` (call on leader changes and ticks). */
  check(): void {
    if (this.held.size === 0 || !this.ready()) return;
    for (const h of [...this.held]) h.release();
  }

  /** Fails every held write with `err` (the member closes, fails or was removed). */
  failAll(err: unknown): void {
    for (const h of [...this.held]) h.fail(err);
  }
}
