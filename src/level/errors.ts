/**
 * Errors of the abstract-level adapter. abstract-level callers branch on `code` strings of
 * the form LEVEL_*; engine errors (KvError) that have a LEVEL_* counterpart are rethrown as
 * a KvEngineLevelError with that code and the KvError as `cause`.
 */
import { type ErrorCode, isKvError } from "../index.js";

export class KvEngineLevelError extends Error {
  readonly code: string;

  constructor(message: string, code: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
  }

  override get name(): string {
    return this.code === "LEVEL_ABORTED" ? "AbortError" : "KvEngineLevelError";
  }
}

/** The LEVEL_* code for each engine error code; INVALID_ARGUMENT keeps the KvError. */
const LEVEL_CODE: Partial<Record<ErrorCode, string>> = {
  CORRUPTION: "LEVEL_CORRUPTION",
  IO_ERROR: "LEVEL_IO_ERROR",
  // The store refuses writes after a failed log write or sync: an I/O failure to callers.
  READ_ONLY: "LEVEL_IO_ERROR",
  // The disk is full: writes are refused until space is freed.
  NO_SPACE: "LEVEL_IO_ERROR",
  LOCKED: "LEVEL_LOCKED",
  CLOSED: "LEVEL_DATABASE_NOT_OPEN",
};

/** `err` as abstract-level callers expect it (see LEVEL_CODE); other errors unchanged. */
export function toLevelError(err: unknown): unknown {
  if (!isKvError(err)) return err;
  const code = LEVEL_CODE[err.code];
  return code === undefined ? err : new KvEngineLevelError(err.message, code, err);
}

/** Awaits an engine promise, converting its rejection with toLevelError. */
export async function engine<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (err) {
    throw toLevelError(err);
  }
}

export function abortError(): KvEngineLevelError {
  return new KvEngineLevelError("Operation has been aborted", "LEVEL_ABORTED");
}
