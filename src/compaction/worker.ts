/**
 * Worker-thread entry point of compaction (started by CompactionWorker in worker-pool.ts,
 * compiled to dist/src/compaction/worker.js). Runs each "run" message's job with a
 * RealFileSystem and posts back the result or the serialized error; an "abort" message
 * makes the job with that id stop at its next check (it then removes its outputs).
 *
 * Imports only what a job needs (tables, iterators, the real file system): nothing that
 * holds main-thread state.
 */
import { parentPort } from "node:worker_threads";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { runCompaction } from "./compaction-job.js";
import { type FromWorker, serializeError, type ToWorker } from "./worker-protocol.js";

const port = parentPort;
if (port === null) throw new Error("compaction worker: must run in a worker thread");

const fs = new RealFileSystem();
const aborted = new Set<number>();
const running = new Set<number>();

function post(message: FromWorker): void {
  port!.postMessage(message);
}

port.on("message", (message: ToWorker) => {
  if (message.type === "abort") {
    if (running.has(message.id)) aborted.add(message.id);
    return;
  }
  const { id, job } = message;
  running.add(id);
  runCompaction(fs, job, { aborted: () => aborted.has(id) })
    .then(
      (result) => post({ type: "done", id, result }),
      (err: unknown) => post({ type: "failed", id, error: serializeError(err) }),
    )
    .finally(() => {
      running.delete(id);
      aborted.delete(id);
    });
});
