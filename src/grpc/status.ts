/**
 * gRPC status codes (the numbers are the protocol's; grpc-js's `status` enum has the same
 * values) and the error a handler throws to end its call with a chosen status.
 */
import type { Metadata } from "./metadata.js";

export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type StatusCode = (typeof Status)[keyof typeof Status];

/** The name of a code ("NOT_FOUND"), or the number as text for one outside the table. */
export function statusName(code: number): string {
  for (const [name, value] of Object.entries(Status)) if (value === code) return name;
  return String(code);
}

/** Thrown by a handler (or the server) to end a call with `code`, `message` and trailers. */
export class GrpcError extends Error {
  override readonly name = "GrpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly trailers?: Metadata,
  ) {
    super(message);
  }
}

/** The final status of a call, as sent in its trailers. */
export interface CallStatus {
  code: number;
  message: string;
  trailers?: Metadata;
}
