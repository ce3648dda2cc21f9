/**
 * The store's background error: a failure that stops writes. Set by a failed append or
 * sync of the write-ahead log, a failed log switch, a failed flush or manifest write, and
 * compactions that keep failing (or fail for lack of space). While it is set, writes are
 * refused (the commit queue turns read-only) and it is reported in stats and once as a
 * "background-error" event.
 *
 * Two severities:
 * - NO_SPACE (the disk or the quota is full): recoverable. The store probes for space with
 *   back-off and, once space is back, flushes its memtables, starts a new log and clears
 *   the error (no-space-recovery.ts): writes resume without a reopen.
 * - anything else (EIO, EROFS, corruption): fatal, kept until the store is reopened. A
 *   fatal error replaces a recoverable one (the recovery then stops); no error replaces a
 *   fatal one.
 */
import type { KvError } from "../errors.js";

export class BackgroundError {
  /** The error recorded, or undefined while the store accepts writes. */
  error: KvError | undefined = undefined;

  /**
   * @param onSet runs with each error recorded: the first one, and a fatal one replacing
   *   a recoverable one
   * @param onCleared runs when a recoverable error is cleared (writes resume)
   */
  constructor(
    private readonly onSet: (err: KvError) => void,
    private readonly onCleared: (err: KvError) => void,
  ) {}

  /** True iff the error recorded is recoverable (NO_SPACE: see the module comment). */
  get recoverable(): boolean {
    return this.error?.code === "NO_SPACE";
  }

  /**
   * Records `err`, unless an error is recorded already: a fatal error still replaces a
   * recoverable one; anything else is dropped.
   */
  set(err: KvError): void {
    const current = this.error;
    if (current !== undefined && !(this.recoverable && err.code !== "NO_SPACE")) return;
    this.error = err;
    this.onSet(err);
  }

  /**
   * Clears `err` iff it is still the error recorded (a fatal one may have replaced it):
   * returns whether it did. REQUIRES: `err` is recoverable.
   */
  clear(err: KvError): boolean {
    if (this.error !== err || err.code !== "NO_SPACE") return false;
    this.error = undefined;
    this.onCleared(err);
    return true;
  }
}
