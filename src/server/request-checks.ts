/**
 * Checks of request fields, done before anything reaches the store, so that a refused
 * request changes nothing. Each throws RpcFailure with the status of docs/errors.md.
 */
import { status } from "@grpc/grpc-js";
import type { ServerLimits } from "./limits.js";
import { RpcFailure } from "./rpc-status.js";

/** A key to store or read: not empty (INVALID_ARGUMENT), at most maxKeyBytes (RESOURCE_EXHAUSTED). */
export function checkKey(key: Uint8Array, limits: ServerLimits, where = "key"): void {
  if (key.length === 0) throw new RpcFailure(status.INVALID_ARGUMENT, `${where} must not be empty`);
  if (key.length > limits.maxKeyBytes) {
    throw new RpcFailure(
      status.RESOURCE_EXHAUSTED,
      `${where} is ${key.length} bytes; the server's limit is ${limits.maxKeyBytes} (maxKeyBytes)`,
    );
  }
}

/** A value to store: at most maxValueBytes (RESOURCE_EXHAUSTED). Empty values are fine. */
export function checkValue(value: Uint8Array, limits: ServerLimits, where = "value"): void {
  if (value.length > limits.maxValueBytes) {
    throw new RpcFailure(
      status.RESOURCE_EXHAUSTED,
      `${where} is ${value.length} bytes; the server's limit is ${limits.maxValueBytes} (maxValueBytes)`,
    );
  }
}

/** Scan bounds: when both are set, start must not be after end (INVALID_ARGUMENT). */
export function checkRange(start: Uint8Array, end: Uint8Array): void {
  if (start.length > 0 && end.length > 0 && Buffer.compare(start, end) > 0) {
    throw new RpcFailure(
      status.INVALID_ARGUMENT,
      "start_key is after end_key; the range [start_key, end_key) must not be inverted",
    );
  }
}
