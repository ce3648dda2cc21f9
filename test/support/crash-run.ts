/**
 * CrashRun: the harness of the crash and fault tests (flush-crash, compaction-crash,
 * power-loss, the power-loss and error-injection sweeps). A run's workload writes batches
 * on a FaultInjectingFileSystem over a MemoryFileSystem; the harness keeps the history of
 * batches, how many of them are durable, and a power-loss clone of the file system taken
 * just before each chosen file operation (with the durable count at that moment).
 *
 * Durability bookkeeping: commits are ordered, so a durable acknowledgement covers every
 * batch before it; a clean close makes every batch written durable (`closed`).
 */

import { FaultInjectingFileSystem, type KvStore, MemoryFileSystem } from "../../src/index.js";
import type { FileOp, Injector } from "../../src/vfs/fault-injecting-file-system.js";
import type { CrashPoint } from "./crash-points.js";
import type { Batch } from "./history.js";
import { issuedByWorker } from "./worker-ops.js";

export interface CrashRunOptions {
  /** Seed of the clones: the clone before operation i uses cloneSeed(i), default seed + i. */
  seed: number;
  cloneSeed?: (index: number) => number;
  /** Share of the unsynced changes each clone keeps (0 = synced data only). Default 0. */
  retention?: number;
  /** Clone the file system just before operation `index` iff this returns true. */
  crashAt?: (index: number, op: FileOp) => boolean;
  /** Fails chosen operations (see FaultInjectingFileSystem). */
  injector?: Injector;
  /** A failed fsync drops the file's unsynced data. Default false. */
  dropUnsyncedOnSyncFailure?: boolean;
  /** crashClone's appendsSurviveAsPrefix (false: unsynced appends lost out of order). Default true. */
  appendsSurviveAsPrefix?: boolean;
}

export class CrashRun {
  readonly mem = new MemoryFileSystem();
  /** The workload's file system; its `log` lists every operation. */
  readonly fs: FaultInjectingFileSystem;
  readonly history: Batch[] = [];
  readonly crashes: CrashPoint[] = [];
  /** Batches [0, durable) were acknowledged durable, or precede one that was. */
  durable = 0;
  private readonly retention: number;
  private readonly seed: number;
  private readonly appendsSurviveAsPrefix: boolean;

  constructor(options: CrashRunOptions) {
    this.seed = options.seed;
    this.retention = options.retention ?? 0;
    this.appendsSurviveAsPrefix = options.appendsSurviveAsPrefix ?? true;
    const crashAt = options.crashAt;
    const cloneSeed = options.cloneSeed ?? ((index: number) => this.seed + index);
    this.fs = new FaultInjectingFileSystem(this.mem, {
      keepLog: true,
      dropUnsyncedOnSyncFailure: options.dropUnsyncedOnSyncFailure ?? false,
      ...(options.injector === undefined ? {} : { injector: options.injector }),
      ...(crashAt === undefined
        ? {}
        : {
            onOp: (op: FileOp, index: number) => {
              if (!crashAt(index, op)) return;
              this.crashes.push({
                index,
                op,
                clone: this.clone(cloneSeed(index)),
                durablePrefix: this.durable,
                byWorker: issuedByWorker(),
              });
            },
          }),
    });
  }

  /** The file system after a power loss now. */
  clone(seed = this.seed): MemoryFileSystem {
    return this.mem.crashClone({
      unsyncedRetention: this.retention,
      seed,
      appendsSurviveAsPrefix: this.appendsSurviveAsPrefix,
    });
  }

  /**
   * Writes batches from `next` with `writers` concurrent writers until the history holds
   * `until` batches; each batch is a write of its ops with its `sync`. Rejects with the
   * first write's error (the other writers stop issuing).
   */
  async write(db: KvStore, next: () => Batch, until: number, writers = 1): Promise<void> {
    let failed = false;
    const writer = async () => {
      while (!failed && this.history.length < until) {
        const batch = next();
        this.history.push(batch);
        const wb = db.batch();
        for (const op of batch.ops) {
          if (op.value === undefined) wb.delete(op.key);
          else wb.put(op.key, op.value);
        }
        try {
          await db.write(wb, { sync: batch.sync });
        } catch (err) {
          failed = true;
          throw err;
        }
        if (batch.sync) this.durable = Math.max(this.durable, batch.id + 1);
      }
    };
    await Promise.all(Array.from({ length: writers }, writer));
  }

  /** The store closed cleanly: every batch written is durable. */
  closed(): void {
    this.durable = this.history.length;
  }
}
