/**
 * How failures become gRPC statuses. Handlers throw `RpcFailure` for what they reject
 * themselves; engine errors (`KvError`) map by code as listed in docs/errors.md; anything
 * else is a bug and becomes INTERNAL.
 *
 * A KvError's status carries trailing metadata (both transports): `kv-error` = its code
 * (so that a client can tell UNAVAILABLE "not proposed", safe to retry, from
 * OUTCOME_UNKNOWN, which maps to UNAVAILABLE too), and `kv-leader` = the leader's client
 * address when the error names it (docs/cluster.md, "Failure behaviour").
 */
import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { type ErrorCode, isKvError } from "../errors.js";

/** Trailing metadata key: the KvError code behind a status. */
export const ERROR_CODE_TRAILER = "kv-error";
/** Trailing metadata key: the leader's client address (`host:port`), when known. */
export const LEADER_TRAILER = "kv-leader";

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
  UNAVAILABLE: status.UNAVAILABLE,
  OUTCOME_UNKNOWN: status.UNAVAILABLE,
  RESOURCE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  FAILED_PRECONDITION: status.FAILED_PRECONDITION,
  SESSION_EXPIRED: status.FAILED_PRECONDITION,
  COMPACTED: status.OUT_OF_RANGE,
  FUTURE_REVISION: status.OUT_OF_RANGE,
  NO_SPACE: status.RESOURCE_EXHAUSTED,
});

export interface RpcStatus {
  code: status;
  details: string;
  /** Trailing metadata (key, value) pairs: see the module comment. */
  trailers: readonly (readonly [string, string])[];
}

const NO_TRAILERS: RpcStatus["trailers"] = [];

/** The status code, message and trailers sent to the client for `err`. */
export function statusOf(err: unknown): RpcStatus {
  if (err instanceof RpcFailure) return { code: err.code, details: err.message, trailers: [] };
  if (isKvError(err)) {
    const trailers: (readonly [string, string])[] = [[ERROR_CODE_TRAILER, err.code]];
    if (err.leaderHint !== undefined && err.leaderHint !== "")
      trailers.push([LEADER_TRAILER, err.leaderHint]);
    return { code: STATUS_OF_KV_ERROR[err.code], details: err.message, trailers };
  }
  const text = err instanceof Error ? err.message : String(err);
  return { code: status.INTERNAL, details: `internal error: ${text}`, trailers: NO_TRAILERS };
}

/** `err` as the object grpc-js sends as a call's final status. */
export function toServiceError(err: unknown): Partial<ServiceError> {
  const { code, details, trailers } = statusOf(err);
  const metadata = new Metadata();
  for (const [k, v] of trailers) metadata.set(k, v);
  return { code, details, metadata };
}
