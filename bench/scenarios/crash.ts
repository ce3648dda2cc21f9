/**
 * `crash_recovery`: the time to reopen a store after a crash that left a populated log.
 *
 * Runs on the `memtable` fixture (n keys written in random order in unsynced batches of
 * FILL_BATCH into a write buffer large enough for all of them: everything is in the log,
 * no table file). The crash: the store's directory is copied (every file, as the OS holds
 * it: what a killed process leaves behind; nothing is synced, closed or flushed) to a
 * sibling directory, while the store stays open. Timed: opening the copy (the store's
 * adapter, same options), which must replay the log. Then (untimed) a sample of keys is
 * read from the reopened copy and checked, the copy closed and deleted.
 *
 * Row: entries recovered per second (n ÷ open time); the latency columns hold the one
 * open. `extra` keeps the open's seconds and the bytes of the files left (`crashBytes`:
 * per file the smaller of its size and its allocated blocks, so neither RocksDB's
 * preallocated log nor a sparse map inflates it), for "ms per MiB" in the report.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { fmtInt } from "../lib/format.js";
import { nowNs, summarize } from "../lib/stats.js";
import { keyTable, valueSource } from "../lib/workload.js";
import { verifyTableSample } from "./common.js";
import { FILL_BATCH, MEMTABLE_BYTES, memtableFixture } from "./fixtures.js";
import { getMemtable, MEMTABLE_PEERS } from "./get.js";
import type { StoreScenario } from "./scenario.js";

const MiB = 1024 * 1024;

/** Bytes of the files under `dir`: per file, min(size, allocated blocks). */
function fileBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const st = fs.statSync(join(entry.parentPath, entry.name));
    total += Math.min(st.size, st.blocks * 512);
  }
  return total;
}

export const crashRecovery: StoreScenario = {
  kind: "store",
  name: "crash_recovery",
  title: "reopen after a crash with a populated log",
  sync: false,
  unit: "entries",
  fixture: memtableFixture,
  extraPeers: MEMTABLE_PEERS,
  defaultN: getMemtable.defaultN,
  sizeLine: (n, valueSize) =>
    `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte values) written in random order in ` +
    `unsynced batches of ${fmtInt(FILL_BATCH)} into a ${MEMTABLE_BYTES / MiB} MiB write ` +
    "buffer (the get_memtable data set: all in the log, no table file); the store's " +
    "directory then copied while it is open (what a killed process leaves: nothing closed, " +
    "flushed or synced), and the copy opened, timed: entries recovered per second, the " +
    "latency columns the open itself. The copy is read fresh from the page cache, so this " +
    "is the cost of a process crash, not of a cold boot. Each store's files and open time " +
    "per MiB of them are under the table.",
  async run(_store, { dir, n, valueSize, seed, openAt }) {
    if (openAt === undefined) throw new Error("crash_recovery needs ctx.openAt");
    const copy = `${dir}-crash`;
    fs.cpSync(dir, copy, { recursive: true });
    try {
      const crashBytes = fileBytes(copy);
      const t0 = nowNs();
      const reopened = await openAt(copy);
      const ns = nowNs() - t0;
      try {
        await verifyTableSample(reopened, keyTable(0, n), n, valueSource(valueSize, seed));
      } finally {
        await reopened.close();
      }
      const seconds = ns / 1e9;
      return {
        rows: [
          {
            label: "",
            ops: n,
            seconds,
            opsPerSec: n / seconds,
            latency: summarize(Float64Array.of(ns)),
          },
        ],
        extra: { recoverySeconds: seconds, crashBytes },
      };
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  },
};
