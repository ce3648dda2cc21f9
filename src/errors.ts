/**
 * The one error class of KV Engine. Callers branch on `code`, never on `message`.
 * Every code is listed, with its meaning and gRPC status, in docs/errors.md.
 */
export type ErrorCode =
  /** Bad input from the caller (empty key, non-byte key, bad option); nothing was changed. */
  | "INVALID_ARGUMENT"
  /** Stored data failed a check (checksum, framing, impossible length). */
  | "CORRUPTION"
  /** The operating system reported an I/O failure. */
  | "IO_ERROR"
  /** The store is closed or closing. */
  | "CLOSED"
  /** Another handle (in this process or another) holds the data directory's lock. */
  | "LOCKED"
  /**
   * A write to the log or a sync failed earlier; the store refuses writes until it is
   * reopened, because the state of unsynced data is unknown (see docs/design.md).
   */
  | "READ_ONLY"
  /** The caller's AbortSignal fired before the write was committed; nothing was written. */
  | "ABORTED";

export interface KvErrorOptions {
  cause?: unknown;
  /** The file the error concerns, when there is one. */
  file?: string;
}

export class KvError extends Error {
  override readonly name = "KvError";
  readonly code: ErrorCode;
  readonly file: string | undefined;

  constructor(code: ErrorCode, message: string, options: KvErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.file = options.file;
  }
}

/** True iff `err` is a KvError (with `code` when given). */
export function isKvError(err: unknown, code?: ErrorCode): err is KvError {
  return err instanceof KvError && (code === undefined || err.code === code);
}

/** Wraps an operating-system error (or anything thrown by a file system) as IO_ERROR. */
export function ioError(what: string, cause: unknown, file?: string): KvError {
  if (cause instanceof KvError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new KvError(
    "IO_ERROR",
    `${what}: ${detail}`,
    file === undefined ? { cause } : { cause, file },
  );
}
