/**
 * The store's background error: the first failure of work no caller waits for (a flush, a
 * log switch's log, a manifest write, compactions that keep failing). Once set it stays
 * until the store is reopened: writes are refused (the commit queue turns read-only), the
 * error is reported in stats and once as a "background-error" event.
 */
import type { KvError } from "../errors.js";

export class BackgroundError {
  /** The first error recorded, or undefined while the store accepts writes. */
  error: KvError | undefined = undefined;

  /** `onFirst` runs once, with the first error recorded. */
  constructor(private readonly onFirst: (err: KvError) => void) {}

  /** Records `err` unless an error is recorded already (later ones are dropped). */
  set(err: KvError): void {
    if (this.error !== undefined) return;
    this.error = err;
    this.onFirst(err);
  }
}
