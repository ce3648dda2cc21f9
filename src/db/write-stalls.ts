/**
 * WriteStalls: making room for writes, before each commit group (docs/design.md, "Flush"
 * and "Compaction", back-pressure). `makeRoom` is the commit queue's `beforeGroup`:
 *
 * - While the active memtable is under its room and level 0 under l0SlowdownTrigger, it
 *   returns undefined (no promise, no I/O: the common case of every write).
 * - A full memtable is switched (memtable-flushes.ts); when the memtables allowed
 *   (maxWriteBufferNumber) are all full, writers wait for the oldest flush ("stopped",
 *   cause "memtable").
 * - From l0SlowdownTrigger level-0 files on, a share of the write groups, growing with
 *   level 0, is delayed by 1 ms ("delayed", cause "level0"); at l0StopTrigger writers wait
 *   for compaction ("stopped", cause "level0").
 *
 * The state is reported as a "stall" event on each change (events.ts) and in stats.
 */
import type { VersionSet } from "../version/version-set.js";
import type { BackgroundError } from "./background-error.js";
import type { CompactionScheduler } from "./compaction-scheduler.js";
import type { StallCause, StallState, StoreEvent } from "./events.js";
import type { MemtableFlushes } from "./memtable-flushes.js";
import type { MemtableSet } from "./memtable-set.js";
import type { ResolvedOptions } from "./options.js";
import type { StallCounters } from "./store-stats.js";

export class WriteStalls {
  readonly counters: StallCounters = { writeStalls: 0, writeSlowdowns: 0, stallMillis: 0 };
  /** The write-stall state as last reported, its cause, and since when. */
  private stallState: StallState = "normal";
  private stallCause: StallCause | undefined;
  private stallSince = performance.now();
  /** Level-0 slowdown: delays owed, in write groups (see makeRoomSlow). */
  private slowdownCredit = 0;
  /**
   * Memtable bytes below which a write needs no room check. With a flush worker: 0 until
   * the first write (which starts the thread), a quarter of writeBufferSize until the log
   * of the first switch is created, then all of it. Without: all of it.
   */
  private roomBytes: number;
  private readonly l0SlowdownTrigger: number;

  constructor(
    private readonly options: ResolvedOptions,
    private readonly versions: VersionSet,
    private readonly memtables: MemtableSet,
    private readonly flushes: MemtableFlushes,
    private readonly compactions: CompactionScheduler,
    private readonly background: BackgroundError,
    private readonly emit: (event: StoreEvent) => void,
  ) {
    this.l0SlowdownTrigger = options.compaction.l0SlowdownTrigger;
    this.roomBytes = compactions.runsInWorker ? 0 : options.writeBufferSize;
  }

  get state(): StallState {
    return this.stallState;
  }

  /** What caused a state other than "normal" (undefined in "normal"). */
  get cause(): StallCause | undefined {
    return this.stallCause;
  }

  /**
   * Runs before each commit group (serialized by the commit queue). Returns undefined
   * when there is room, so the common case costs no promise; rejects with the background
   * error once there is one.
   */
  makeRoom(): Promise<void> | undefined {
    if (this.background.error) return Promise.reject(this.background.error);
    if (
      this.memtables.mem.approximateBytes < this.roomBytes &&
      this.versions.current.numFiles(0) < this.l0SlowdownTrigger
    ) {
      if (this.stallState !== "normal") this.setStall("normal", undefined);
      return undefined;
    }
    return this.makeRoomSlow();
  }

  /**
   * Records the write-stall state and its cause; a change of state is reported once, as
   * an event.
   */
  private setStall(state: StallState, cause: StallCause | undefined): void {
    this.stallCause = cause;
    if (state === this.stallState) return;
    const now = performance.now();
    const previousMs = now - this.stallSince;
    this.stallState = state;
    this.stallSince = now;
    this.emit({ type: "stall", state, cause, previousMs });
  }

  private async makeRoomSlow(): Promise<void> {
    const { writeBufferSize, maxWriteBufferNumber } = this.options;
    if (this.roomBytes === 0) {
      // The first write: start the flush worker now, so that loading it (tens of
      // milliseconds) is done before the first memtable fills and writers need it.
      this.roomBytes = writeBufferSize / 4;
      this.compactions.prestartWorker();
    }
    if (this.roomBytes < writeBufferSize && this.memtables.mem.approximateBytes >= this.roomBytes) {
      // The first memtable is a quarter full: create the log the first switch will need.
      this.roomBytes = writeBufferSize;
      this.flushes.prepareNextLog();
    }
    const { l0SlowdownTrigger, l0StopTrigger } = this.options.compaction;
    const counters = this.counters;
    let slowed = false;
    for (;;) {
      if (this.background.error) throw this.background.error;
      const l0 = this.versions.current.numFiles(0);
      if (!slowed && l0 >= l0SlowdownTrigger && l0 < l0StopTrigger) {
        // Level 0 is filling faster than compaction drains it: delay write groups by 1 ms,
        // a share of them that grows with level 0, from 1 / (stop - slowdown + 1) at the
        // slowdown trigger to every group just below the stop trigger. Writes give way more
        // as level 0 nears the stop, instead of all being stopped there. (LevelDB delays
        // every write from its trigger on; the compaction worker has a core of its own
        // here, so a delay helps it only through the CPU it frees: docs/design.md.)
        slowed = true;
        this.setStall("delayed", "level0");
        this.slowdownCredit +=
          (l0 - l0SlowdownTrigger + 1) / (l0StopTrigger - l0SlowdownTrigger + 1);
        if (this.slowdownCredit < 1) continue;
        this.slowdownCredit -= 1;
        counters.writeSlowdowns++;
        const started = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 1));
        counters.stallMillis += performance.now() - started;
        continue;
      }
      if (l0 >= l0StopTrigger) {
        this.setStall("stopped", "level0");
        counters.writeStalls++;
        const started = performance.now();
        this.compactions.maybeSchedule();
        await this.compactions.whenIdle();
        if (this.versions.current.numFiles(0) >= l0StopTrigger) {
          // Nothing ran (e.g. waiting for a retry): check again shortly.
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        counters.stallMillis += performance.now() - started;
        continue;
      }
      if (this.memtables.mem.approximateBytes < writeBufferSize) {
        this.setStall(slowed ? "delayed" : "normal", slowed ? "level0" : undefined);
        return;
      }
      const flushing = this.flushes.running;
      if (this.memtables.imms.length >= maxWriteBufferNumber - 1 && flushing) {
        // The memtables allowed are all full, the older ones waiting for their flushes:
        // writers wait for the oldest to be flushed.
        this.setStall("stopped", "memtable");
        counters.writeStalls++;
        const started = performance.now();
        await flushing.catch(() => {});
        counters.stallMillis += performance.now() - started;
        continue;
      }
      await this.flushes.switchMemtable();
      this.setStall(slowed ? "delayed" : "normal", slowed ? "level0" : undefined);
      return;
    }
  }
}
