/**
 * The signal a handler hands the store when the server answers before deadlines
 * (KvServerOptions.deadlineMarginMs > 0, as cluster members do): it fires when the call's
 * own signal fires, or `margin` before the call's deadline, where margin is a twentieth
 * of the time the call has left, at least 1 ms and at most `deadlineMarginMs`. A
 * replicated store then gives its own answer (UNAVAILABLE for a read no majority
 * confirmed, with the leader's address; OUTCOME_UNKNOWN for a write not applied yet) while
 * the client still listens, instead of the client's bare DEADLINE_EXCEEDED.
 */
import type { AbortSignalLike } from "../db/kv-backend.js";
import { CallCancellation } from "./call-cancellation.js";

export interface DeadlineSignal {
  readonly signal: AbortSignalLike;
  /** Stops the timer and the listening (call it when the handler settled). */
  done(): void;
}

const NOTHING = () => {};

/** See the module comment. `deadline` is a Date.now() time; undefined: none. */
export function answerBeforeDeadline(
  parent: AbortSignalLike,
  deadline: number | undefined,
  maxMarginMs: number,
): DeadlineSignal {
  if (deadline === undefined || maxMarginMs <= 0 || !Number.isFinite(deadline)) {
    return { signal: parent, done: NOTHING };
  }
  const left = deadline - Date.now();
  const margin = Math.min(maxMarginMs, Math.max(1, left / 20));
  const out = new CallCancellation();
  const fire = () => out.cancel(new Error("the call's deadline is near"));
  if (parent.aborted) {
    fire();
    return { signal: out, done: NOTHING };
  }
  const timer = setTimeout(fire, Math.max(0, left - margin));
  parent.addEventListener("abort", fire);
  return {
    signal: out,
    done: () => {
      clearTimeout(timer);
      parent.removeEventListener("abort", fire);
    },
  };
}
