/**
 * How failures become gRPC statuses. Handlers throw `RpcFailure` for what they reject
 * themselves; engine errors (`KvError`) map by code as listed in docs/errors.md; anything
 * else is a bug and becomes INTERNAL.
 */
import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { type ErrorCode, isKvError } from "../errors.js";

/** A request the server refuses, with the status to send and a message saying why. */
export class RpcFailure extends Error {
  override readonly name = "RpcFailure";
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
  }
}

/** The gRPC status for each engine error code. */
export const STATUS_OF_KV_ERROR: Readonly<Record<ErrorCode, status>> = Object.freeze({
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  CORRUPTION: status.DATA_LOSS,
  IO_ERROR: status.UNAVAILABLE,
  READ_ONLY: status.UNAVAILABLE,
  CLOSED: status.UNAVAILABLE,
  LOCKED: status.FAILED_PRECONDITION,
  ABORTED: status.CANCELLED,
  NO_SPACE: status.RESOURCE_EXHAUSTED,
});

/** The status code and message sent to the client for `err`. */
export function statusOf(err: unknown): { code: status; details: string } {
  if (err instanceof RpcFailure) return { code: err.code, details: err.message };
  if (isKvError(err)) return { code: STATUS_OF_KV_ERROR[err.code], details: err.message };
  const text = err instanceof Error ? err.message : String(err);
  return { code: status.INTERNAL, details: `internal error: ${text}` };
}

/** `err` as the object grpc-js sends as a call's final status. */
export function toServiceError(err: unknown): Partial<ServiceError> {
  const { code, details } = statusOf(err);
  return { code, details, metadata: new Metadata() };
}
