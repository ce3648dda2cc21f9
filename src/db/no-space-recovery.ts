/**
 * NoSpaceRecovery: resuming writes after the disk (or the quota) filled up, without a
 * reopen (docs/design.md, "When the disk is full"; RocksDB's error handler does the same).
 *
 * It starts when the background error becomes NO_SPACE (a failed log append or sync, log
 * switch, flush, manifest write or compaction). Writes are refused meanwhile; reads go on.
 * Each attempt, after a back-off (BASE_DELAY_MS doubling up to MAX_DELAY_MS):
 *
 * 1. the manifest, if its write failed, is replaced by a new one (the failed file is never
 *    written or synced again: VersionSet.resumeAfterNoSpace);
 * 2. the probe: PROBE_BYTES written to a new temp file and synced (then removed): is
 *    there space again?
 * 3. if the log failed, writes move to a new log and the memtable holding the
 *    acknowledged writes of the failed one becomes immutable; the failed log is never
 *    synced again (after a failed fsync the kernel may have dropped its dirty pages; a
 *    second fsync could falsely succeed);
 * 4. every immutable memtable is flushed to a synced table, installed in the manifest; once
 *    no memtable holds a write, the manifest's log number moves to the current log, so
 *    the failed log is never replayed;
 * 5. the error is cleared: the commit queue accepts writes, compactions are scheduled,
 *    obsolete files (the failed log among them) are swept.
 *
 * Every acknowledged write is in a memtable or a synced table throughout, and reaches a
 * synced table before any new write is accepted; new writes get higher sequence numbers.
 * So nothing acknowledged is lost or reordered, even by a crash at any step. An attempt
 * that fails for lack of space again is retried; one that fails otherwise (EIO, EROFS)
 * turns the error fatal: writes are then refused until the store is reopened.
 */
import { ioError, isNoSpace, KvError } from "../errors.js";
import { tempFilePath } from "../version/file-names.js";
import { VersionEdit } from "../version/version-edit.js";
import type { VersionSet } from "../version/version-set.js";
import type { FileSystem, WritableFile } from "../vfs/file-system.js";
import type { BackgroundError } from "./background-error.js";
import type { CommitQueue } from "./commit-queue.js";
import type { StoreEvent } from "./events.js";
import type { MemtableFlushes } from "./memtable-flushes.js";
import type { MemtableSet } from "./memtable-set.js";

/** Delay before the first attempt; each failed attempt doubles it, up to MAX_DELAY_MS. */
export const BASE_DELAY_MS = 100;
export const MAX_DELAY_MS = 2000;
/** Bytes the probe writes and syncs. */
export const PROBE_BYTES = 64 * 1024;

/** What the recovery works with: the store's parts. */
export interface RecoveryHost {
  readonly fs: FileSystem;
  readonly dir: string;
  readonly versions: VersionSet;
  readonly memtables: MemtableSet;
  readonly commits: CommitQueue;
  readonly flushes: MemtableFlushes;
  readonly background: BackgroundError;
  emit(event: StoreEvent): void;
  /** True once the store is closing. */
  closing(): boolean;
}

export class NoSpaceRecovery {
  private timer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> | undefined;
  /** Attempts that failed since the error was set. */
  private failures = 0;
  private stopped = false;

  constructor(private readonly host: RecoveryHost) {}

  /** Starts the attempts (REQUIRES: the background error is NO_SPACE). Idempotent. */
  start(): void {
    if (this.stopped || this.timer !== undefined || this.attempt !== undefined) return;
    this.failures = 0;
    this.schedule();
  }

  /** Stops the attempts and waits for one in progress (at close). Never throws. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.attempt;
  }

  private schedule(): void {
    const delay = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.failures);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.attempt = this.run().finally(() => {
        this.attempt = undefined;
      });
    }, delay);
    this.timer.unref();
  }

  /** One attempt; never throws. */
  private async run(): Promise<void> {
    const { background } = this.host;
    const error = background.error;
    if (this.stopped || this.host.closing() || error === undefined || !background.recoverable) {
      return;
    }
    try {
      await this.heal();
    } catch (err) {
      if (this.stopped || this.host.closing()) return;
      if (isNoSpace(err)) {
        this.failures++;
        const retryInMs = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.failures);
        this.host.emit({
          type: "recovery-failed",
          message: (err as Error).message,
          attempts: this.failures,
          retryInMs,
        });
        this.schedule();
        return;
      }
      background.set(
        new KvError(
          "IO_ERROR",
          `recovery from a full disk failed, the store refuses writes until reopened: ${(err as Error).message}`,
          { cause: err },
        ),
      );
      return;
    }
    if (this.stopped || this.host.closing()) return;
    // A fatal error set meanwhile stays (clear refuses it); the attempts end either way.
    background.clear(error);
  }

  /** Steps 1-4 of the module comment; throws what fails. */
  private async heal(): Promise<void> {
    const { commits, flushes, memtables, versions } = this.host;
    if (versions.failed !== undefined) await versions.resumeAfterNoSpace();
    await this.probe();
    await commits.whenIdle();
    if (memtables.log.failed) await flushes.switchForRecovery();
    await flushes.flushForRecovery();
    if (
      memtables.imms.length === 0 &&
      memtables.mem.count === 0 &&
      versions.logNumber < memtables.logNumber
    ) {
      // No memtable holds a write: every log before the current one is in the tables.
      const edit = new VersionEdit();
      edit.logNumber = memtables.logNumber;
      edit.lastSequence = commits.sequence;
      await versions.logAndApply(edit);
    }
  }

  /** Writes and syncs PROBE_BYTES to a new temp file, then removes it; throws on failure. */
  private async probe(): Promise<void> {
    const { fs, dir, versions } = this.host;
    const path = tempFilePath(dir, versions.newFileNumber());
    let file: WritableFile | undefined;
    try {
      file = await fs.createWritable(path);
      file.append(new Uint8Array(PROBE_BYTES));
      await file.sync();
    } catch (err) {
      throw ioError("probe for free space", err, path);
    } finally {
      await file?.close().catch(() => {});
      await fs.remove(path).catch(() => {});
    }
  }
}
