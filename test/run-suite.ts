/**
 * The whole suite (`npm test`): every compiled test file, in two runs of `node --test`.
 *
 * 1. Most files run several at a time (`--test-concurrency`, default the cores less one
 *    but at least 2): many of them wait far more than they compute (fsyncs, elections,
 *    child processes, a nemesis's fixed schedule), so two files share a core well.
 * 2. Then the files in TIMED run one at a time: each asserts a bound in wall-clock time
 *    (a first write within 1.5 s of a leader's kill, a lease's expiry within its TTL plus
 *    election timeouts, a background sync's timing), which a busy neighbour would stretch.
 *
 * Both runs always happen; the exit code is the first failing run's. KV_TEST_CONCURRENCY
 * sets the first run's concurrency (1 runs every file alone); with KV_STRESS=1 it defaults
 * to 1, since the long modes were sized for a machine of their own.
 * Arguments are passed to both runs (e.g. `--test-name-pattern`).
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Files (relative to dist/test, `/`-separated) that assert wall-clock bounds. */
const TIMED: readonly string[] = [
  "cluster/etcd-lease-chaos.test.js",
  "cluster/etcd-leases.test.js",
  "cluster/failover-clients.test.js",
  "db/compaction-faults.test.js",
  "db/wal-bytes-per-sync.test.js",
  "replication/driver.test.js",
  "replication/failover.test.js",
  "replication/leader-gone.test.js",
];

/** Every `*.test.js` under `dir`, relative and `/`-separated, sorted. */
function testFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".test.js"))
        found.push(relative(dir, path).split(sep).join("/"));
    }
  };
  walk(dir);
  return found.sort();
}

function concurrency(): number {
  const raw = process.env.KV_TEST_CONCURRENCY;
  if (raw === undefined || raw === "")
    return process.env.KV_STRESS === "1" ? 1 : Math.max(2, availableParallelism() - 1);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`KV_TEST_CONCURRENCY must be a positive integer, got ${raw}`);
  return n;
}

/** Whether this Node knows `--test-concurrency` (20.10 and later). */
function hasConcurrencyFlag(): boolean {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  return major > 20 || (major === 20 && minor >= 10);
}

function runTests(
  files: readonly string[],
  root: string,
  args: readonly string[],
  parallel: number,
): number {
  if (files.length === 0) return 0;
  // Older Node 20s run the files at their own default (the cores less one).
  const flag = hasConcurrencyFlag() ? [`--test-concurrency=${parallel}`] : [];
  const result = spawnSync(
    process.execPath,
    ["--test", ...flag, ...args, ...files.map((f) => join(root, f))],
    { stdio: "inherit" },
  );
  return result.status ?? 1;
}

function main(): void {
  const root = dirname(fileURLToPath(import.meta.url));
  const all = testFiles(root);
  const missing = TIMED.filter((f) => !all.includes(f));
  if (missing.length > 0)
    throw new Error(`run-suite: TIMED names files that do not exist: ${missing.join(", ")}`);
  const args = process.argv.slice(2);
  const first = runTests(
    all.filter((f) => !TIMED.includes(f)),
    root,
    args,
    concurrency(),
  );
  const second = runTests(TIMED, root, args, 1);
  process.exitCode = first !== 0 ? first : second;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
