/**
 * Physical compaction (docs/format/mvcc.md, "Compaction"): removes the history below a
 * compacted revision C in the background, in bounded chunks, resumably.
 *
 * It walks the changes entries from the last finished compaction's revision F up to C
 * (entries below F are gone already; the keys not changed in [F, C] were compacted to at
 * most one live version by then). Per chunk of changes and per key, with r its newest
 * change in the chunk: the key's history versions below r go, and r's too when it is a
 * deletion; the changes entries below C go. Over all chunks each key keeps exactly its
 * newest version at or below C unless that is a deletion: the model's rule.
 *
 * Each chunk is one store batch that also records C and its last changes key under
 * COMPACT_CURSOR_KEY (`target:fixed64 changesKey`); a restart finishes that compaction
 * from after it, then goes on to the compaction scheduled last. The end writes COMPACT_FINISHED_KEY = C
 * and deletes the cursor. Only versions no read at or above C can see are deleted, so
 * chunks need no ordering against writes. Chunks wait for their batch and yield to the
 * event loop between them, so writes interleave.
 */
import { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import type { WriteOptions } from "../db/write-options.js";
import { KvError } from "../errors.js";
import { getFixed64, putFixed64 } from "../util/coding.js";
import {
  COMPACT_CURSOR_KEY,
  COMPACT_FINISHED_KEY,
  changesKey,
  historyKey,
  keyOfChange,
  revisionOfChange,
} from "./layout.js";
import { keyId } from "./overlay.js";
import { RECORD_DELETE } from "./record.js";
import { encodeRevision } from "./write-txn.js";

/** Changes entries per chunk (each costs at most two deletes and one history seek). */
export const DEFAULT_COMPACTION_CHUNK = 512;

export interface CompactorOptions {
  readonly chunk?: number;
  readonly write?: WriteOptions;
  /** Told after each chunk's batch (tests: reads and crashes during a compaction). */
  readonly onChunk?: () => void | Promise<void>;
}

/** Where an interrupted compaction stopped: its target and the last changes key done. */
export interface CompactionCursor {
  readonly target: number;
  readonly key: Uint8Array;
}

export function encodeCursor(c: CompactionCursor): Uint8Array {
  const out = new Uint8Array(8 + c.key.length);
  putFixed64(out, 0, c.target);
  out.set(c.key, 8);
  return out;
}

/** Throws CORRUPTION for a malformed cursor. */
export function decodeCursor(v: Uint8Array): CompactionCursor {
  if (v.length < 9) throw new KvError("CORRUPTION", "mvcc: malformed compaction cursor");
  return { target: getFixed64(v, 0), key: v.subarray(8) };
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class PhysicalCompactor {
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  /**
   * `finished`: the revision the last finished compaction reached; `cursor`: the changes
   * key a compaction interrupted by a restart processed last.
   */
  constructor(
    private readonly store: KvStore,
    private finished: number,
    private cursor: CompactionCursor | undefined,
    private readonly options: CompactorOptions = {},
  ) {}

  /** Compacts physically to `rev` after the compactions scheduled earlier. */
  schedule(rev: number): Promise<void> {
    const job = this.chain.then(() => this.run(rev));
    this.chain = job.catch(() => {});
    return job;
  }

  /** Stops after the chunk running now; later jobs reject with CLOSED. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.chain;
  }

  private async run(target: number): Promise<void> {
    if (target <= this.finished) return;
    const chunk = this.options.chunk ?? DEFAULT_COMPACTION_CHUNK;
    const stop = changesKey(target + 1);
    for (;;) {
      if (this.stopped) throw new KvError("CLOSED", "mvcc store closed during a compaction");
      const from = this.cursor?.target === target ? this.cursor.key : undefined;
      const it = this.store.iterator({
        ...(from === undefined ? { gte: changesKey(this.finished) } : { gt: from }),
        lt: stop,
        limit: chunk,
      });
      const rows = await it.all();
      if (rows.length === 0) break;
      const b = new WriteBatch();
      const newest = new Map<string, { key: Uint8Array; rev: number; deleted: boolean }>();
      for (const [k, v] of rows) {
        const rev = revisionOfChange(k);
        const key = keyOfChange(k);
        newest.set(keyId(key), { key, rev, deleted: v.length === 1 && v[0] === RECORD_DELETE });
        if (rev < target) b.delete(k);
      }
      for (const { key, rev, deleted } of newest.values()) {
        const older = await this.store
          .iterator({ gte: historyKey(key), lt: historyKey(key, rev), keysOnly: true })
          .all();
        for (const [h] of older) b.delete(h);
        if (deleted) b.delete(historyKey(key, rev));
      }
      const last = rows[rows.length - 1]![0];
      const cursor = { target, key: last };
      b.put(COMPACT_CURSOR_KEY, encodeCursor(cursor));
      await this.store.write(b, this.options.write);
      this.cursor = cursor;
      await this.options.onChunk?.();
      await yieldToLoop();
    }
    const b = new WriteBatch();
    b.put(COMPACT_FINISHED_KEY, encodeRevision(target));
    b.delete(COMPACT_CURSOR_KEY);
    await this.store.write(b, this.options.write);
    this.finished = target;
    this.cursor = undefined;
  }
}
