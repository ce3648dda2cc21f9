/**
 * Snapshot: a pinned sequence number and read view. Reads given `{ snapshot }` see the
 * store as it was when the snapshot was taken, however many writes, flushes and
 * compactions happen later, until `release()`.
 */
import { KvError } from "../errors.js";
import type { ReadView } from "./read-view.js";

export class Snapshot {
  private releasedFlag = false;

  /** @internal created by KvStore.snapshot() */
  constructor(
    /** Entries with a higher sequence number are invisible to this snapshot. */
    readonly sequence: number,
    /** @internal */
    readonly view: ReadView,
    private readonly onRelease: (s: Snapshot) => void,
  ) {}

  get released(): boolean {
    return this.releasedFlag;
  }

  /** Unpins the snapshot. Idempotent. Reads with a released snapshot fail. */
  release(): void {
    if (this.releasedFlag) return;
    this.releasedFlag = true;
    this.view.unref();
    this.onRelease(this);
  }

  /** @internal throws INVALID_ARGUMENT if released */
  check(): void {
    if (this.releasedFlag) throw new KvError("INVALID_ARGUMENT", "the snapshot was released");
  }
}
