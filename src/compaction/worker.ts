/**
 * Worker-thread entry point of compaction (started by CompactionWorker in worker-pool.ts,
 * compiled to dist/src/compaction/worker.js). Its file system comes in workerData
 * (WorkerData: a RealFileSystem rebuilt here, or a proxy of the main thread's). Runs each
 * "run" message's job and posts back the result or the serialized error; an "abort"
 * message (or, with a proxied file system, the shared abort slot) makes the job with that
 * id stop at its next check (it then removes its outputs). A "flush" message writes a
 * memtable image as a level-0 table (synced, directory synced) and posts back its
 * metadata. Jobs interleave: each yields to the event loop every few thousand entries, so
 * a flush is not stuck behind a long compaction. With a proxied file system, answers go
 * through the file-system channel, behind the job's last operation.
 *
 * Imports only what a job needs (tables, iterators, the file systems): nothing that holds
 * main-thread state.
 */
import { parentPort, workerData } from "node:worker_threads";
import { threadFileSystem } from "../vfs/thread-file-system.js";
import { runCompaction } from "./compaction-job.js";
import { writeLevel0Table } from "./level0-table.js";
import { setThreadNice } from "./thread-priority.js";
import {
  type FromWorker,
  serializeError,
  type ToWorker,
  type WorkerData,
} from "./worker-protocol.js";

const port = parentPort;
if (port === null) throw new Error("compaction worker: must run in a worker thread");

const data = workerData as WorkerData | undefined;
if (data?.nice !== undefined && data.nice > 0) setThreadNice(data.nice);
const { fs, post: postThroughChannel } = threadFileSystem(data?.fs ?? { kind: "real" });
/** With a proxied file system: the id of the job the main thread wants aborted. */
const abortSlot = data?.abort === undefined ? undefined : new Int32Array(data.abort);
const aborted = new Set<number>();
const running = new Set<number>();
/**
 * Flushes still building their table: compactions pause at their next yield point until
 * none is left. A flush leaves the set when its bytes are written, so compactions run
 * while it waits for its fsync.
 */
const flushes = new Set<Promise<void>>();

function post(message: FromWorker): void {
  if (postThroughChannel !== undefined) postThroughChannel(message);
  else port!.postMessage(message);
}

function isAborted(id: number): boolean {
  return aborted.has(id) || (abortSlot !== undefined && Atomics.load(abortSlot, 0) === id);
}

port.on("message", (message: ToWorker) => {
  if (message.type === "abort") {
    if (running.has(message.id)) aborted.add(message.id);
    return;
  }
  if (message.type === "flush") {
    const { id, job } = message;
    let built = () => {};
    const building = new Promise<void>((resolve) => {
      built = resolve;
    });
    flushes.add(building);
    void building.then(() => flushes.delete(building));
    writeLevel0Table(fs, job.dir, job.path, job.number, job.image, job.options, built)
      .then(
        (meta) => post({ type: "flushed", id, meta }),
        (err: unknown) => post({ type: "failed", id, error: serializeError(err) }),
      )
      .finally(built);
    return;
  }
  const { id, job } = message;
  running.add(id);
  runCompaction(fs, job, {
    aborted: () => isAborted(id),
    // Flushes' table building first: writers may be waiting for one, nobody waits for a
    // compaction.
    pause: () => (flushes.size === 0 ? undefined : Promise.all(flushes).then(() => {})),
  })
    .then(
      (result) => post({ type: "done", id, result }),
      (err: unknown) => post({ type: "failed", id, error: serializeError(err) }),
    )
    .finally(() => {
      running.delete(id);
      aborted.delete(id);
    });
});
