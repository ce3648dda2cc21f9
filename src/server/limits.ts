/**
 * Limits the server enforces, with their defaults (documented in docs/server.md). A key or
 * value over its limit is refused with RESOURCE_EXHAUSTED before anything is stored; a
 * request message over `maxReceiveMessageBytes` is refused by grpc-js with
 * RESOURCE_EXHAUSTED before it reaches the store.
 */
export interface ServerLimits {
  /** Largest key accepted by Put, Delete and Write (bytes). Default 16 KiB. */
  maxKeyBytes: number;
  /** Largest value accepted by Put and Write (bytes). Default 1 MiB. */
  maxValueBytes: number;
  /** Largest request message (bytes, after decompression). Default 4 MiB. */
  maxReceiveMessageBytes: number;
  /** Concurrent calls (HTTP/2 streams) per client connection. Default 100. */
  maxConcurrentStreams: number;
  /**
   * Target size of one ScanResponse (bytes of keys and values). Rows are added to a
   * message until it reaches this size; a single larger row travels alone. Default 64 KiB.
   */
  scanBatchBytes: number;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxKeyBytes: 16 * 1024,
  maxValueBytes: 1024 * 1024,
  maxReceiveMessageBytes: 4 * 1024 * 1024,
  maxConcurrentStreams: 100,
  scanBatchBytes: 64 * 1024,
});

/** The defaults overridden by `given`; throws RangeError for a value that is not a positive integer. */
export function resolveLimits(given: Partial<ServerLimits> = {}): ServerLimits {
  const out: ServerLimits = { ...DEFAULT_LIMITS };
  for (const name of Object.keys(DEFAULT_LIMITS) as Array<keyof ServerLimits>) {
    const v = given[name];
    if (v === undefined) continue;
    if (!Number.isSafeInteger(v) || v < 1) {
      throw new RangeError(`${name} must be a positive integer, got ${String(v)}`);
    }
    out[name] = v;
  }
  return out;
}
