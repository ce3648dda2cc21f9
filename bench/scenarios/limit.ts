/**
 * `limit`: what the machine can do at best, without any store, measured in the same kind
 * of child process and directory as the stores:
 *
 * - append+fdatasync: 4 KiB `fs.writeSync` at the end of a growing file, then
 *   `fs.fdatasyncSync`, per op. Each sync must also persist the new file size/extent.
 * - overwrite+fdatasync: the file is first preallocated with zeros and fdatasync'ed; then
 *   the same 4 KiB writes overwrite it sequentially, each followed by `fdatasyncSync`. No
 *   metadata changes, so this is the cheapest durable write the device offers.
 * - append+async fdatasync: as append+fdatasync, but fdatasync via the callback API (the
 *   libuv thread pool), which is what a store that never blocks the event loop pays.
 * - overwrite+async fdatasync: as overwrite+fdatasync with the callback API (the path of a
 *   store with a preallocated log and non-blocking syncs).
 * - memory copy: `Buffer.copy` of 64 MiB, several times; reported as bandwidth.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import type { LimitScenario } from "./scenario.js";

const BLOCK = 4096;
const COPY_BYTES = 64 * 1024 * 1024;
const MEMCPY_COPIES = 10;

export const LIMIT_APPEND_SYNC = "append+fdatasync";
export const LIMIT_OVERWRITE_SYNC = "overwrite+fdatasync";
export const LIMIT_APPEND_ASYNC = "append+async fdatasync";
export const LIMIT_OVERWRITE_ASYNC = "overwrite+async fdatasync";
export const LIMIT_MEMCPY = "memory copy";

function fdatasyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.fdatasync(fd, (err) => (err ? reject(err) : resolve()));
  });
}

function block(): Buffer {
  const buf = Buffer.alloc(BLOCK);
  for (let i = 0; i < BLOCK; i++) buf[i] = (i * 131 + 7) & 0xff;
  return buf;
}

/** Writes `n` blocks at offsets 0, 4096, ... with one fdatasync per block. */
async function writeLoop(
  path: string,
  n: number,
  preallocate: boolean,
  asyncSync: boolean,
  label: string,
  description: string,
): Promise<Measurement> {
  const fd = fs.openSync(path, "w+", 0o600);
  try {
    if (preallocate) {
      const zeros = Buffer.alloc(1 << 20);
      for (let off = 0; off < n * BLOCK; off += zeros.length) {
        fs.writeSync(fd, zeros, 0, Math.min(zeros.length, n * BLOCK - off), off);
      }
      fs.fsyncSync(fd);
    }
    const buf = block();
    const latencies = new Float64Array(n);
    const start = nowNs();
    for (let i = 0; i < n; i++) {
      const t0 = nowNs();
      fs.writeSync(fd, buf, 0, BLOCK, i * BLOCK);
      if (asyncSync) await fdatasyncAsync(fd);
      else fs.fdatasyncSync(fd);
      latencies[i] = nowNs() - t0;
    }
    const seconds = (nowNs() - start) / 1e9;
    return {
      label,
      description,
      ops: n,
      seconds,
      opsPerSec: n / seconds,
      latency: summarize(latencies),
    };
  } finally {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
  }
}

function memoryCopy(copies: number): Measurement {
  const src = Buffer.alloc(COPY_BYTES, 0x5a);
  const dst = Buffer.alloc(COPY_BYTES);
  src.copy(dst); // warm-up: fault in both buffers
  const latencies = new Float64Array(copies);
  const start = nowNs();
  for (let i = 0; i < copies; i++) {
    const t0 = nowNs();
    src.copy(dst);
    latencies[i] = nowNs() - t0;
  }
  const seconds = (nowNs() - start) / 1e9;
  return {
    label: LIMIT_MEMCPY,
    description: `Buffer.copy of 64 MiB, ${copies} times`,
    ops: copies,
    seconds,
    opsPerSec: copies / seconds,
    latency: summarize(latencies),
    bytesPerSec: (copies * COPY_BYTES) / seconds,
  };
}

export const limit: LimitScenario = {
  kind: "limit",
  name: "limit",
  title: "Machine limits: raw 4 KiB durable writes and memory copy, no store",
  defaultN: (quick) => (quick ? 1000 : 2000),
  async run({ dir, n }) {
    const rows: Measurement[] = [];
    rows.push(
      await writeLoop(
        join(dir, "append.dat"),
        n,
        false,
        false,
        LIMIT_APPEND_SYNC,
        "4 KiB writeSync at end of file + fdatasyncSync",
      ),
    );
    rows.push(
      await writeLoop(
        join(dir, "overwrite.dat"),
        n,
        true,
        false,
        LIMIT_OVERWRITE_SYNC,
        "4 KiB writeSync over preallocated zeros + fdatasyncSync",
      ),
    );
    rows.push(
      await writeLoop(
        join(dir, "append-async.dat"),
        n,
        false,
        true,
        LIMIT_APPEND_ASYNC,
        "4 KiB writeSync at end of file + callback fdatasync",
      ),
    );
    rows.push(
      await writeLoop(
        join(dir, "overwrite-async.dat"),
        n,
        true,
        true,
        LIMIT_OVERWRITE_ASYNC,
        "4 KiB writeSync over preallocated zeros + callback fdatasync",
      ),
    );
    rows.push(memoryCopy(MEMCPY_COPIES));
    return { rows };
  },
};
