/**
 * Deleting files the store no longer needs. Called only after the manifest edit that
 * made them obsolete is durable, so a crash never leaves the manifest naming a deleted
 * file. Files the sweep misses (a crash in between) are found by the next sweep at open.
 */

import { parseFileName } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import { joinPath } from "../vfs/file-system.js";

export interface LiveSet {
  /** Table files listed by some version that is still referenced. */
  liveTables: ReadonlySet<number>;
  /** Table files being written (flush or compaction outputs not yet in a version). */
  pendingOutputs: ReadonlySet<number>;
  /** Logs numbered below this are covered by tables (the manifest's log number). */
  minLogNumber: number;
  /** The log receiving writes. */
  currentLogNumber: number;
  /** Logs a checkpoint is copying: kept until it is done, even once covered by tables. */
  pinnedLogs: ReadonlySet<number>;
  /** The manifest CURRENT names. */
  manifestNumber: number;
}

export interface Removed {
  tables: number[];
  logs: number[];
  other: string[];
}

/**
 * Removes obsolete files from `dir`; returns what it removed. Errors are thrown.
 *
 * `liveSet` is called once, after the directory is listed: every listed file existed
 * before that moment, and a file that was live or being written then can only have become
 * more live since (pending -> in a version), while an obsolete file never comes back. A
 * live set taken before the listing could miss a flush output that left `pendingOutputs`
 * for a version in between, and delete it.
 */
export async function deleteObsoleteFiles(
  fs: FileSystem,
  dir: string,
  liveSet: () => LiveSet,
): Promise<Removed> {
  const removed: Removed = { tables: [], logs: [], other: [] };
  const names = await fs.list(dir);
  const live = liveSet();
  const pending = new Set(live.pendingOutputs);
  for (const name of names) {
    const f = parseFileName(name);
    if (f === undefined || f.type === "lock" || f.type === "current") continue;
    let obsolete = false;
    switch (f.type) {
      case "table":
        obsolete = !live.liveTables.has(f.number) && !pending.has(f.number);
        if (obsolete) removed.tables.push(f.number);
        break;
      case "log":
        obsolete =
          f.number < live.minLogNumber &&
          f.number !== live.currentLogNumber &&
          !live.pinnedLogs.has(f.number);
        if (obsolete) removed.logs.push(f.number);
        break;
      case "manifest":
        // Only older ones: a newer manifest may be half-way through a rollover.
        obsolete = f.number < live.manifestNumber;
        if (obsolete) removed.other.push(name);
        break;
      case "temp":
        // Temp files belong to a CURRENT swap in progress; the version set removes
        // stale ones when it opens.
        break;
    }
    if (obsolete) await fs.remove(joinPath(dir, name));
  }
  return removed;
}

/**
 * Runs deleteObsoleteFiles in the background, one sweep at a time: a sweep asked for while
 * one runs is run once more after it (unless the store is closing). Background sweeps
 * never throw; a failed one leaves its files for the next.
 */
export class ObsoleteFileSweeper {
  private sweeping: Promise<void> | undefined;
  private sweepAgain = false;

  /**
   * @param liveSet what is live, read after each listing (see deleteObsoleteFiles)
   * @param removedTables told of the tables each sweep removed (to evict their readers)
   * @param closing true once the store is closing: no further sweep is started
   */
  constructor(
    private readonly fs: FileSystem,
    private readonly dir: string,
    private readonly liveSet: () => LiveSet,
    private readonly removedTables: (numbers: readonly number[]) => void,
    private readonly closing: () => boolean,
  ) {}

  /** Starts a background sweep (or one more after the running one). */
  schedule(): void {
    if (this.sweeping) {
      this.sweepAgain = true;
      return;
    }
    this.sweeping = this.sweep()
      .catch(() => {})
      .finally(() => {
        this.sweeping = undefined;
        if (this.sweepAgain && !this.closing()) {
          this.sweepAgain = false;
          this.schedule();
        }
      });
  }

  /**
   * Sweeps now, after the sweep running (if any), and resolves once this sweep is done;
   * throws what it throws. Never runs beside another sweep.
   */
  async sweepNow(): Promise<void> {
    while (this.sweeping) await this.sweeping;
    const run = this.sweep();
    this.sweeping = run
      .catch(() => {})
      .finally(() => {
        this.sweeping = undefined;
        if (this.sweepAgain && !this.closing()) {
          this.sweepAgain = false;
          this.schedule();
        }
      });
    await run;
  }

  /**
   * Deletes the files no version needs now; throws what deleting throws. Runs only after
   * the manifest edit that dropped them is durable (the live set says so).
   */
  async sweep(): Promise<void> {
    const removed = await deleteObsoleteFiles(this.fs, this.dir, this.liveSet);
    this.removedTables(removed.tables);
  }

  /** Resolves once no background sweep runs (for close). Never throws. */
  async idle(): Promise<void> {
    if (this.sweeping) await this.sweeping.catch(() => {});
  }
}
