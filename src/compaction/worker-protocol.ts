/**
 * Messages between a CompactionWorker (main thread) and its worker thread (worker.ts), and
 * how errors cross: as { code, message, name, file }, rebuilt on the main thread as a
 * KvError when the code is one of KvError's, as a CompactionAbortedError for "ABORTED",
 * else as a CompactionWorkerError with the same name, message and code. So a failure in
 * the worker reads exactly like the same failure of an inline job (code, message, file).
 */
import { type ErrorCode, KvError } from "../errors.js";
import type { MemtableImage } from "../memtable/memtable-image.js";
import type { TableOptions } from "../sstable/table-builder.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { ThreadFileSystemSpec } from "../vfs/file-system-channel.js";
import {
  CompactionAbortedError,
  type CompactionJob,
  type CompactionResult,
} from "./compaction-job.js";

/** A flush to run on the worker: write `image` as level-0 table `number` at `path`. */
export interface FlushJob {
  readonly dir: string;
  readonly path: string;
  readonly number: number;
  readonly options: TableOptions;
  readonly image: MemtableImage;
}

/**
 * What the thread starts with: its file system (rebuilt or proxied: src/vfs/
 * thread-file-system.ts) and, with a proxied one, a shared int32 the main thread sets to
 * the id of the job to abort (seen at the job's next step, wherever the thread is).
 */
export interface WorkerData {
  readonly fs: ThreadFileSystemSpec;
  readonly abort: SharedArrayBuffer | undefined;
  /** The thread's nice value (thread-priority.ts); undefined: left as it is. */
  readonly nice?: number | undefined;
}

export type ToWorker =
  | { readonly type: "run"; readonly id: number; readonly job: CompactionJob }
  | { readonly type: "flush"; readonly id: number; readonly job: FlushJob }
  | { readonly type: "abort"; readonly id: number };

export type FromWorker =
  | { readonly type: "done"; readonly id: number; readonly result: CompactionResult }
  | { readonly type: "flushed"; readonly id: number; readonly meta: FileMetadata }
  | { readonly type: "failed"; readonly id: number; readonly error: SerializedError };

export interface SerializedError {
  readonly code: string | undefined;
  readonly message: string;
  readonly name: string;
  readonly file: string | undefined;
}

const KV_ERROR_CODES = [
  "INVALID_ARGUMENT",
  "CORRUPTION",
  "IO_ERROR",
  "CLOSED",
  "LOCKED",
  "READ_ONLY",
  "ABORTED",
  "UNAVAILABLE",
  "OUTCOME_UNKNOWN",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "SESSION_EXPIRED",
  "NO_SPACE",
  "COMPACTED",
  "FUTURE_REVISION",
] as const satisfies readonly ErrorCode[];

// Fails to compile when ErrorCode gains a code missing from the list above.
type MissingCode = Exclude<ErrorCode, (typeof KV_ERROR_CODES)[number]>;
const everyCodeListed: [MissingCode] extends [never] ? true : never = true;
void everyCodeListed;

function isKvErrorCode(code: string | undefined): code is ErrorCode {
  return (KV_ERROR_CODES as readonly string[]).includes(code ?? "");
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const { code, file } = err as { code?: unknown; file?: unknown };
    return {
      code: typeof code === "string" ? code : undefined,
      message: err.message,
      name: err.name,
      file: typeof file === "string" ? file : undefined,
    };
  }
  return { code: undefined, message: String(err), name: "Error", file: undefined };
}

/**
 * An error from the worker that is not a KvError (e.g. a file system's own error, code
 * "EIO", from an unwrapped call), with the original's name, message and code.
 */
export class CompactionWorkerError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    name = "CompactionWorkerError",
  ) {
    super(message);
    this.name = name;
  }
}

export function deserializeError(e: SerializedError): Error {
  if (e.code === "ABORTED") return new CompactionAbortedError(e.message);
  if (isKvErrorCode(e.code)) {
    return new KvError(e.code, e.message, e.file === undefined ? {} : { file: e.file });
  }
  return new CompactionWorkerError(e.message, e.code, e.name);
}
