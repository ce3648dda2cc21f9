/**
 * Storage-side measures that work the same for every store: bytes the process wrote
 * (`/proc/self/io`) and the disk usage of a directory (as `du`).
 */
import * as fs from "node:fs";
import { join } from "node:path";

/**
 * `write_bytes` of /proc/<pid>/io (default: this process): bytes the process (all its
 * threads: KV Engine's compaction worker, RocksDB's and LevelDB's background threads)
 * caused to be written to storage, counted when page-cache pages are dirtied (a file
 * deleted before write-back is still counted). undefined where /proc is not available
 * (or the process is gone).
 */
export function processWriteBytes(pid: number | "self" = "self"): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/io`, "utf8");
  } catch {
    return undefined;
  }
  const m = /^write_bytes:\s*(\d+)$/m.exec(text);
  return m === null ? undefined : Number(m[1]);
}

/**
 * Allocated bytes of every file under `dir` (512-byte blocks, as `du` counts them). A file
 * removed between the listing and its stat counts as gone (as `du` does): a store may still
 * be deleting obsolete files when its compactions are idle (KV Engine sweeps them after the
 * install; a 1M-key fillrandom run failed on such a table, ENOENT).
 */
export function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(path);
    else if (entry.isFile())
      total += (fs.statSync(path, { throwIfNoEntry: false })?.blocks ?? 0) * 512;
  }
  return total;
}

/** Table files (`.sst`: KV Engine, RocksDB; `.ldb`: LevelDB) and manifest bytes under `dir`. */
export function tableAndManifestFiles(dir: string): { tableFiles: number; manifestBytes: number } {
  let tableFiles = 0;
  let manifestBytes = 0;
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith(".sst") || name.endsWith(".ldb")) tableFiles++;
    else if (name.startsWith("MANIFEST-")) {
      manifestBytes += fs.statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
    }
  }
  return { tableFiles, manifestBytes };
}
