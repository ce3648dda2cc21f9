/**
 * CompactionWorker: runs compaction jobs and flushes on one worker thread (worker.ts), so
 * merging and table building never take event-loop time from reads and writes.
 *
 * - The thread starts lazily at the first job (or `prestart`) and is reused; it does not
 *   keep the process alive while no job is running (unref'd when idle).
 * - Its file system is the caller's (`fs`): a RealFileSystem is rebuilt on the thread and
 *   jobs run there concurrently, as many as are sent (they interleave at their yield
 *   points); any other file system is proxied to this thread (src/vfs/
 *   thread-file-system.ts), and then the thread runs one job at a time, flushes before
 *   compactions, in lockstep with this thread (see "Proxied file systems").
 * - Errors come back rebuilt (worker-protocol.ts): KvError for KvError codes,
 *   CompactionAbortedError for "ABORTED", else the original's name, message and code.
 * - `terminate()` asks running jobs to abort (each then removes its outputs), waits up to
 *   `abortGraceMillis` for them, then ends the thread. Every job pending at the call is
 *   rejected with an ABORTED error, even one that finished during the grace period, so the
 *   caller never installs a job it gave up on. Outputs of a job cut off by the thread's end
 *   may remain on disk: they are unlisted files, deleted by the store's sweep at open.
 *   A later job starts a new thread.
 * - If the thread dies (uncaught error, exit), its pending jobs reject with IO_ERROR and
 *   the next job starts a new thread.
 *
 * Proxied file systems. The thread's file operations are served here by a FileSystemHost,
 * and the thread posts its answers through the same channel, so this thread sees them in
 * order after the job's last operation. While a job is in flight, this thread pumps the
 * channel: it blocks while the worker computes and runs its own tasks only while it awaits
 * a file operation it performs for the worker (during which the worker is blocked). So the
 * operations a test file system sees, and where the job's answer lands among this thread's
 * own work, depend only on this thread's order of events: a seeded run numbers its file
 * operations the same way every time, in worker mode as inline. The price is concurrency:
 * this thread waits for the worker's computing, which suits tests, never production.
 */
import { Worker } from "node:worker_threads";
import { KvError } from "../errors.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { FileSystem } from "../vfs/file-system.js";
import type { FileSystemHost } from "../vfs/file-system-host.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { shareFileSystem } from "../vfs/thread-file-system.js";
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
  type WorkerData,
} from "./worker-protocol.js";

/**
 * Cap on the worker's young generation, which V8 otherwise grows when objects survive its
 * collections (table readers, index entries and key copies that live as long as a
 * compaction). Its garbage is short-lived, so collecting more often costs nothing
 * measurable; the peak RSS it saves: docs/benchmarks/tables.md ("Worker memory").
 */
const WORKER_YOUNG_GENERATION_MB = 2;

export interface CompactionWorkerOptions {
  /** The worker script. Default: worker.js next to this module. */
  workerUrl?: URL | undefined;
  /** How long `terminate` lets aborting jobs clean up before ending the thread. Default 1000. */
  abortGraceMillis?: number | undefined;
  /** The file system jobs read and write. Default: a RealFileSystem. */
  fs?: FileSystem | undefined;
  /** The thread's nice value (OpenOptions.compactionNice). Default: left as it is. */
  nice?: number | undefined;
}

interface Pending {
  readonly resolve: (result: CompactionResult | FileMetadata) => void;
  readonly reject: (err: Error) => void;
  /** Resolves when the thread answered (or died). */
  readonly answered: Promise<void>;
  readonly markAnswered: () => void;
}

/** A proxied thread's channel and its one-job-at-a-time queue. */
interface Lockstep {
  readonly host: FileSystemHost;
  /** The id of the job to abort, seen by the thread at the job's next step. */
  readonly abort: Int32Array;
  /** Jobs not sent yet, in sending order (flushes ahead of compactions). */
  readonly queue: ToWorker[];
  /** The job the thread has, if any. */
  inFlight: number | undefined;
  pumping: boolean;
}

/** One worker thread and its pending jobs. */
interface Thread {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
  /** Set with a proxied file system. */
  readonly lockstep: Lockstep | undefined;
  terminating: boolean;
}

export class CompactionWorker {
  private thread: Thread | undefined;
  private nextId = 1;
  private readonly workerUrl: URL;
  private readonly abortGraceMillis: number;
  private readonly fs: FileSystem;
  private readonly nice: number | undefined;

  constructor(options: CompactionWorkerOptions = {}) {
    this.nice = options.nice;
    this.workerUrl = options.workerUrl ?? new URL("./worker.js", import.meta.url);
    this.abortGraceMillis = options.abortGraceMillis ?? 1000;
    this.fs = options.fs ?? new RealFileSystem();
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
      const lockstep = thread.lockstep;
      if (lockstep !== undefined) {
        const queue = lockstep.queue;
        const at = message.type === "flush" ? queue.findIndex((m) => m.type !== "flush") : -1;
        queue.splice(at < 0 ? queue.length : at, 0, message);
        this.dispatch(thread, lockstep);
        return;
      }
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
      const lockstep = thread.lockstep;
      if (lockstep?.inFlight !== undefined) Atomics.store(lockstep.abort, 0, lockstep.inFlight);
      for (const id of thread.pending.keys()) {
        const message: ToWorker = { type: "abort", id };
        thread.worker.postMessage(message);
      }
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.abortGraceMillis);
      });
      const inFlight = [...thread.pending.entries()]
        .filter(([id]) => lockstep === undefined || id === lockstep.inFlight)
        .map(([, p]) => p.answered);
      await Promise.race([Promise.all(inFlight), grace]);
      clearTimeout(timer);
    }
    const exited = thread.worker.terminate();
    if (thread.lockstep === undefined) await exited;
    else {
      // The channel is closed, so the thread can do nothing more. Not waiting for its exit,
      // which takes as long as the OS takes, keeps this thread's order of events (and of
      // file operations) the same in every run.
      thread.lockstep.host.close();
      exited.catch(() => {});
    }
    this.fail(thread, new CompactionAbortedError("compaction worker terminated"));
  }

  private start(): Thread {
    if (this.thread !== undefined) return this.thread;
    const shared = shareFileSystem(this.fs);
    const abort = shared.host === undefined ? undefined : new SharedArrayBuffer(4);
    const workerData: WorkerData = { fs: shared.spec, abort, nice: this.nice };
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      workerData,
      transferList: shared.transfer,
    });
    const lockstep: Lockstep | undefined =
      shared.host === undefined || abort === undefined
        ? undefined
        : {
            host: shared.host,
            abort: new Int32Array(abort),
            queue: [],
            inFlight: undefined,
            pumping: false,
          };
    const thread: Thread = { worker, pending: new Map(), lockstep, terminating: false };
    worker.unref();
    worker.on("message", (message: FromWorker) => this.onMessage(thread, message));
    worker.on("error", (err: Error) => {
      this.died(thread, `compaction worker failed: ${err.message}`, err);
    });
    worker.on("exit", (code: number) => {
      this.died(thread, `compaction worker exited with code ${code}`);
    });
    this.thread = thread;
    return thread;
  }

  /** The thread is gone: its pending jobs reject, the next job starts a new one. */
  private died(thread: Thread, message: string, cause?: unknown): void {
    if (this.thread === thread) this.thread = undefined;
    thread.lockstep?.host.close();
    this.fail(
      thread,
      thread.terminating
        ? new CompactionAbortedError("compaction worker terminated")
        : new KvError("IO_ERROR", message, cause === undefined ? {} : { cause }),
    );
  }

  /** Proxied file system: sends the next queued job when the thread has none. */
  private dispatch(thread: Thread, lockstep: Lockstep): void {
    if (lockstep.inFlight !== undefined || thread.terminating) return;
    const message = lockstep.queue.shift();
    if (message === undefined) return;
    lockstep.inFlight = message.id;
    try {
      thread.worker.postMessage(message);
    } catch (err) {
      lockstep.inFlight = undefined;
      const p = thread.pending.get(message.id);
      thread.pending.delete(message.id);
      this.idle(thread);
      p?.markAnswered();
      p?.reject(err instanceof Error ? err : new Error(String(err)));
      this.dispatch(thread, lockstep);
      return;
    }
    if (!lockstep.pumping) {
      lockstep.pumping = true;
      // From the next microtask: the caller's synchronous code finishes first.
      queueMicrotask(() => void this.pump(thread, lockstep));
    }
  }

  /**
   * Proxied file system: serves the thread's file operations and takes its answers while a
   * job is in flight (see the module comment).
   */
  private async pump(thread: Thread, lockstep: Lockstep): Promise<void> {
    try {
      while (lockstep.inFlight !== undefined) {
        let message: unknown;
        try {
          message = await lockstep.host.nextMessage();
        } catch (err) {
          // The thread exited or went silent (terminate closes the host too).
          this.died(thread, `compaction worker failed: ${(err as Error).message}`, err);
          if (!thread.terminating) void thread.worker.terminate();
          return;
        }
        const answer = message as FromWorker;
        if (answer.id === lockstep.inFlight) lockstep.inFlight = undefined;
        this.onMessage(thread, answer);
        this.dispatch(thread, lockstep);
      }
    } finally {
      lockstep.pumping = false;
    }
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
    if (thread.lockstep !== undefined) {
      thread.lockstep.queue.length = 0;
      thread.lockstep.inFlight = undefined;
    }
    for (const p of pending) {
      p.markAnswered();
      p.reject(err);
    }
  }

  private idle(thread: Thread): void {
    if (thread.pending.size === 0) thread.worker.unref();
  }
}
