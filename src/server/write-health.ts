/**
 * The health of kv.v1.KvService follows whether the store accepts writes: NOT_SERVING
 * while `stats().backgroundError` is set (a failed log write, a full disk: see
 * docs/errors.md), SERVING again once it is cleared (the store recovered from a full disk)
 * or never. Reads are served either way; the server's own status ("") stays SERVING.
 * The backend is read through the KvBackend seam: polled every `intervalMs`, and on
 * `refresh()` (the lean path calls it before answering a health check, so a check never
 * answers a stale status).
 */
import type { KvBackend } from "../db/kv-backend.js";

/** Default polling interval. */
export const WRITE_HEALTH_POLL_MS = 250;

export interface WriteHealth {
  /** Reads the backend's state now and reports a change. */
  refresh(): void;
  /** Stops polling. */
  stop(): void;
}

/**
 * Calls `report(acceptsWrites)` now and on every change of whether `store` accepts writes
 * (see the module comment).
 */
export function watchWriteHealth(
  store: KvBackend,
  report: (acceptsWrites: boolean) => void,
  intervalMs = WRITE_HEALTH_POLL_MS,
): WriteHealth {
  let last: boolean | undefined;
  const refresh = (): void => {
    let accepts: boolean;
    try {
      accepts = store.stats().backgroundError === undefined;
    } catch {
      return; // a closed backend: the server is shutting down
    }
    if (accepts === last) return;
    last = accepts;
    report(accepts);
  };
  refresh();
  const timer = setInterval(refresh, intervalMs);
  timer.unref();
  return { refresh, stop: () => clearInterval(timer) };
}
