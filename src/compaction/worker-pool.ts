/**
 * CompactionWorker: runs compaction jobs on one worker thread (worker.ts), so merging and
 * table building never take event-loop time from reads and writes.
 *
 * - The thread starts lazily at the first `run` and is reused; it does not keep the
 *   process alive while no job is running (unref'd when idle).
 * - Errors come back rebuilt (worker-protocol.ts): KvError for KvError codes,
 *   CompactionAbortedError for "ABORTED".
 * - `terminate()` asks running jobs to abort (each then removes its outputs), waits up to
 *   `abortGraceMillis` for them, then ends the thread. Every job pending at the call is
 *   rejected with an ABORTED error, even one that finished during the grace period, so the
 *   caller never installs a job it gave up on. Outputs of a job cut off by the thread's end
 *   may remain on disk: they are unlisted files, deleted by the store's sweep at open.
 *   A later `run` starts a new thread.
 * - If the thread dies (uncaught error, exit), its pending jobs reject and the next `run`
 *   starts a new thread.
 */
import { Worker } from "node:worker_threads";
import { KvError } from "../errors.js";
import type { FileMetadata } from "../version/file-metadata.js";
import {
  CompactionAbortedError,
  type CompactionJob,
  type CompactionResult,
} from "./compaction-job.js";
import {
  deserializeError,
  type FlushJob,
  type FromWorker,
  type ToWorker,
} from "./worker-protocol.js";

/**
 * Cap on the worker's young generation, which V8 otherwise grows up to 16 MiB semispaces
 * when objects survive its collections: table readers, index entries and key copies that
 * live as long as a compaction. Its garbage is short-lived, so collecting more often costs
 * nothing measurable, while the default let its heap reach ~41 MiB: a 1M-key load of one
 * put at a time peaked at ~200 MiB RSS with the default and ~186 MiB with 4 MiB, at the
 * same throughput. 2 MiB (later, 4 runs each, alternated): that load ~148 -> ~145 MiB,
 * batched ~140 -> ~139, throughput unchanged.
 */
const WORKER_YOUNG_GENERATION_MB = 2;

export interface CompactionWorkerOptions {
  /** The worker script. Default: worker.js next to this module. */
  workerUrl?: URL | undefined;
  /** How long `terminate` lets aborting jobs clean up before ending the thread. Default 1000. */
  abortGraceMillis?: number | undefined;
}

interface Pending {
  readonly resolve: (result: CompactionResult | FileMetadata) => void;
  readonly reject: (err: Error) => void;
  /** Resolves when the thread answered (or died). */
  readonly answered: Promise<void>;
  readonly markAnswered: () => void;
}

/** One worker thread and its pending jobs. */
interface Thread {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
  terminating: boolean;
}

export class CompactionWorker {
  private thread: Thread | undefined;
  private nextId = 1;
  private readonly workerUrl: URL;
  private readonly abortGraceMillis: number;

  constructor(options: CompactionWorkerOptions = {}) {
    this.workerUrl = options.workerUrl ?? new URL("./worker.js", import.meta.url);
    this.abortGraceMillis = options.abortGraceMillis ?? 1000;
  }

  /** Number of jobs sent and not yet answered. */
  get running(): number {
    return this.thread?.pending.size ?? 0;
  }

  /**
   * Starts the thread now (it loads its modules meanwhile) rather than at the first job,
   * so that the first flush does not wait for it. The thread does not keep the process
   * alive while idle.
   */
  prestart(): void {
    this.start();
  }

  /** Runs `job` on the worker thread; resolves with its result. */
  run(job: CompactionJob): Promise<CompactionResult> {
    return this.send((id) => ({ type: "run", id, job })) as Promise<CompactionResult>;
  }

  /**
   * Writes a flush's level-0 table on the worker thread (see FlushJob); resolves with its
   * metadata once the table and its directory are synced. The image is shared memory
   * (Memtable.image): postMessage shares it with the worker, nothing is copied.
   */
  flush(job: FlushJob): Promise<FileMetadata> {
    return this.send((id) => ({ type: "flush", id, job })) as Promise<FileMetadata>;
  }

  private send(make: (id: number) => ToWorker): Promise<CompactionResult | FileMetadata> {
    const thread = this.start();
    const id = this.nextId++;
    return new Promise<CompactionResult | FileMetadata>((resolve, reject) => {
      let markAnswered!: () => void;
      const answered = new Promise<void>((r) => {
        markAnswered = r;
      });
      thread.pending.set(id, { resolve, reject, answered, markAnswered });
      thread.worker.ref();
      const message = make(id);
      try {
        thread.worker.postMessage(message);
      } catch (err) {
        thread.pending.delete(id);
        this.idle(thread);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Aborts pending jobs (they reject with ABORTED) and ends the thread. */
  async terminate(): Promise<void> {
    const thread = this.thread;
    if (thread === undefined) return;
    this.thread = undefined;
    thread.terminating = true;
    const pending = [...thread.pending.values()];
    if (pending.length > 0) {
      for (const id of thread.pending.keys()) {
        const message: ToWorker = { type: "abort", id };
        thread.worker.postMessage(message);
      }
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.abortGraceMillis);
      });
      await Promise.race([Promise.all(pending.map((p) => p.answered)), grace]);
      clearTimeout(timer);
    }
    await thread.worker.terminate();
    this.fail(thread, new CompactionAbortedError("compaction worker terminated"));
  }

  private start(): Thread {
    if (this.thread !== undefined) return this.thread;
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    });
    const thread: Thread = { worker, pending: new Map(), terminating: false };
    worker.unref();
    worker.on("message", (message: FromWorker) => this.onMessage(thread, message));
    worker.on("error", (err: Error) => {
      if (this.thread === thread) this.thread = undefined;
      this.fail(
        thread,
        thread.terminating
          ? new CompactionAbortedError("compaction worker terminated")
          : new KvError("IO_ERROR", `compaction worker failed: ${err.message}`, { cause: err }),
      );
    });
    worker.on("exit", (code: number) => {
      if (this.thread === thread) this.thread = undefined;
      this.fail(
        thread,
        thread.terminating
          ? new CompactionAbortedError("compaction worker terminated")
          : new KvError("IO_ERROR", `compaction worker exited with code ${code}`),
      );
    });
    this.thread = thread;
    return thread;
  }

  private onMessage(thread: Thread, message: FromWorker): void {
    const p = thread.pending.get(message.id);
    if (p === undefined) return;
    thread.pending.delete(message.id);
    this.idle(thread);
    p.markAnswered();
    if (thread.terminating) p.reject(new CompactionAbortedError("compaction worker terminated"));
    else if (message.type === "done") p.resolve(message.result);
    else if (message.type === "flushed") p.resolve(message.meta);
    else p.reject(deserializeError(message.error));
  }

  /** Rejects every pending job of `thread` with `err`. */
  private fail(thread: Thread, err: Error): void {
    const pending = [...thread.pending.values()];
    thread.pending.clear();
    for (const p of pending) {
      p.markAnswered();
      p.reject(err);
    }
  }

  private idle(thread: Thread): void {
    if (thread.pending.size === 0) thread.worker.unref();
  }
}
