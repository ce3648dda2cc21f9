/**
 * The CPU priority of the flush and compaction thread (OpenOptions.compactionNice). On
 * Linux a nice value can be set per thread: setpriority on the thread's id, which
 * /proc/thread-self names. Elsewhere nothing is changed. RocksDB's
 * Env::LowerThreadPoolCPUPriority: when the machine is short of CPU, the background work
 * of flushes and compactions yields to the event-loop thread that serves requests (and,
 * in a cluster member, runs the Raft cycle); when a core is free it runs as before.
 */
import { readlinkSync } from "node:fs";
import { getPriority, setPriority } from "node:os";

/**
 * Sets the calling thread's nice value to `nice` (0-19; raising it needs no privilege).
 * Returns the thread's nice value afterwards, or undefined where threads have no nice
 * value of their own or it could not be set (the thread then runs as it was).
 */
export function setThreadNice(nice: number): number | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isSafeInteger(tid) || tid <= 0) return undefined;
    setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    return undefined;
  }
}
