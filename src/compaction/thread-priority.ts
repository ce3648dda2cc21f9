/**
 * The CPU priority of the flush and compaction thread (OpenOptions.compactionNice). On
 * Linux the nice value is per thread, and setpriority on "this process" (who = 0) sets the
 * calling thread's only (setpriority(2), BUGS); elsewhere it would set the whole
 * process's, so nothing is changed there. RocksDB's Env::LowerThreadPoolCPUPriority: when
 * the machine is short of CPU, the background work of flushes and compactions yields to
 * the event-loop thread that serves requests (and, in a cluster member, runs the Raft
 * cycle); when a core is free it runs as before.
 */
import { getPriority, setPriority } from "node:os";

/**
 * Sets the calling thread's nice value to `nice` (0-19; raising it needs no privilege).
 * Returns the thread's nice value afterwards, or undefined off Linux or when it could not
 * be set (the thread then runs as it was).
 */
export function setThreadNice(nice: number): number | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    setPriority(nice);
    return getPriority();
  } catch {
    return undefined;
  }
}
