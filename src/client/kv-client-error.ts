/**
 * The one error class of KvClient: a call that ended with a non-OK gRPC status. Callers
 * branch on `code` (a grpc-js `status` number; `codeName` spells it), never on `message`.
 * The meaning of each code for this service is listed in docs/errors.md.
 */
import { status } from "@grpc/grpc-js";

export class KvClientError extends Error {
  override readonly name = "KvClientError";

  constructor(
    /** The gRPC status code, e.g. `status.INVALID_ARGUMENT` (3). */
    readonly code: status,
    /** The server's (or the transport's) explanation. */
    readonly details: string,
    options?: { cause?: unknown },
  ) {
    super(`${status[code] ?? `status ${code}`}: ${details}`, options);
  }

  /** The name of the status code, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }
}

/** True iff `err` is a KvClientError (with status `code` when given). */
export function isKvClientError(err: unknown, code?: status): err is KvClientError {
  return err instanceof KvClientError && (code === undefined || err.code === code);
}

/** A grpc-js call error (or anything thrown) as a KvClientError. */
export function toClientError(err: unknown): KvClientError {
  if (err instanceof KvClientError) return err;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") {
    const details = "details" in err && typeof err.details === "string" ? err.details : "";
    return new KvClientError(err.code as status, details, { cause: err });
  }
  const text = err instanceof Error ? err.message : String(err);
  return new KvClientError(status.UNKNOWN, text, { cause: err });
}
