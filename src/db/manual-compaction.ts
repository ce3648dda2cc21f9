/**
 * compactRange, the manual compaction behind KvStore.compactRange and the admin service:
 * flush, compact every table overlapping the range down to the last level, then delete the
 * obsolete files and wait until the table cache has closed them, so that their space is
 * free when it resolves (files an open iterator or snapshot reads excepted).
 */
import { ioError } from "../errors.js";
import type { AdminCompactOptions } from "./admin-backend.js";
import type { StoreEventListener } from "./events.js";
import type { StoreParts } from "./store-parts.js";

/**
 * Runs a manual compaction of [start, end] (either omitted: unbounded) after `flush`.
 * `options.onCompaction` hears, through `taps`, of every compaction that finishes meanwhile.
 */
export async function compactRange(
  parts: StoreParts,
  taps: Set<StoreEventListener>,
  flush: () => Promise<void>,
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
  options: AdminCompactOptions,
): Promise<void> {
  const { onCompaction } = options;
  const tap: StoreEventListener | undefined =
    onCompaction === undefined
      ? undefined
      : (event) => {
          if (event.type === "compaction") onCompaction(event);
        };
  if (tap !== undefined) taps.add(tap);
  try {
    await flush();
    const { sweeper, tables } = parts;
    await parts.compactions.compactRange(start, end, async () => {
      try {
        await sweeper.sweepNow();
      } catch (err) {
        throw ioError("compactRange: deleting the obsolete files failed", err, parts.dir);
      }
      await tables.evictedClosed();
    });
  } finally {
    if (tap !== undefined) taps.delete(tap);
  }
}
