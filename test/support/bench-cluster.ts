/** A benchmark cluster (bench/cluster/) for a test: started in a temporary directory, stopped and removed after. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchCluster } from "../../bench/cluster/cluster.js";

/** Runs `body` on the cluster `start` starts in a fresh directory; stops it and removes the directory after. */
export async function withBenchCluster(
  start: (dir: string) => Promise<BenchCluster>,
  body: (c: BenchCluster) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "kv-bench-cluster-"));
  const c = await start(dir);
  try {
    await body(c);
  } finally {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
