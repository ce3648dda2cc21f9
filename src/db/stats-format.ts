/**
 * `db.stats()` for humans: a per-level table in the manner of LevelDB's `leveldb.stats`,
 * then the write path, the caches and the background state, as plain text. Used by
 * `kv-engine stats` and handy in a debugger or a log line.
 *
 * Per level: files and size now; then what compactions wrote INTO that level (level 0:
 * flushes): count, time, megabytes read and written. Sizes in MiB with two decimals.
 */
import type { StoreStats } from "./store-stats.js";

const MIB = 1024 * 1024;

const mib = (bytes: number) => (bytes / MIB).toFixed(2);
const seconds = (ms: number) => (ms / 1000).toFixed(2);
const percent = (part: number, whole: number) =>
  whole === 0 ? "-" : `${((100 * part) / whole).toFixed(1)}%`;

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)];
}

/** The text described in the module comment (lines joined by "\n", ending with one). */
export function formatStats(s: StoreStats): string {
  const rows: string[][] = [];
  for (let level = 0; level < s.levelFiles.length; level++) {
    const c =
      level === 0
        ? {
            compactions: s.flushes,
            bytesRead: 0,
            bytesWritten: s.flushBytes,
            millis: s.flushMillis,
          }
        : s.compaction.perLevel[level];
    rows.push([
      String(level),
      String(s.levelFiles[level] ?? 0),
      mib(s.levelBytes[level] ?? 0),
      String(c?.compactions ?? 0),
      seconds(c?.millis ?? 0),
      mib(c?.bytesRead ?? 0),
      mib(c?.bytesWritten ?? 0),
    ]);
  }
  const totalFiles = s.levelFiles.reduce((a, b) => a + b, 0);
  const totalBytes = s.levelBytes.reduce((a, b) => a + b, 0);
  const cache = s.blockCache;
  const lines = [
    ...table(["Level", "Files", "Size(MiB)", "Writes", "Time(s)", "Read(MiB)", "Write(MiB)"], rows),
    `Total: ${totalFiles} files, ${mib(totalBytes)} MiB; level 0 writes are flushes, ` +
      "deeper ones compactions into that level",
    "",
    `Sequence ${s.lastSequence}; memtable ${mib(s.memtableBytes)} MiB (${s.memtableEntries} ` +
      `entries), ${s.immutableMemtables} immutable waiting; log ${s.logNumber}`,
    `Writes: ${s.commit.batches} batches in ${s.commit.groups} groups ` +
      `(largest ${s.commit.maxGroupSize}), ${s.commit.syncs} log syncs`,
    `Write amplification ${s.writeAmplification.toFixed(2)}; pending compaction ` +
      `${mib(s.pendingCompactionBytes)} MiB; ${s.compaction.trivialMoves} trivial moves; ` +
      `dropped ${s.compaction.droppedVersions} old versions, ${s.compaction.droppedTombstones} tombstones`,
    `Stalls: ${s.writeStalls} stops, ${s.writeSlowdowns} slowdowns, ${seconds(s.stallMillis)} s waited; ` +
      `now ${s.stallState}${s.stallCause === undefined ? "" : ` (${s.stallCause})`}`,
    `Block cache: ${mib(cache.bytes)} of ${mib(cache.capacity)} MiB, ${cache.count} blocks, ` +
      `hit rate ${percent(cache.hits, cache.hits + cache.misses)} (${cache.hits} hits, ${cache.misses} misses)`,
    `Bloom filters: ${s.bloomFilter.checked} checked, ${s.bloomFilter.useful} ruled the key out ` +
      `(${percent(s.bloomFilter.useful, s.bloomFilter.checked)})`,
    `Open: ${s.openIterators} iterators, ${s.openSnapshots} snapshots`,
    `Compactions: ${s.compaction.running ? "one running" : "idle"}, ${s.compaction.failures} failed` +
      (s.compaction.lastError === undefined ? "" : ` (last: ${s.compaction.lastError})`),
    `Background error: ${s.backgroundError ?? "none"}`,
  ];
  return `${lines.join("\n")}\n`;
}
