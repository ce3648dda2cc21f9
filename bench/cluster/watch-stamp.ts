/**
 * The values the watch benchmarks put: the workload's value bytes with a stamp in front,
 * so that a watcher in another process can tell how long each event took from its put:
 * bytes 0-7 the put's send time (float64, little-endian: ns since the run's epoch, a
 * `process.hrtime.bigint()` reading every process of the run shares, as CLOCK_MONOTONIC is
 * one clock for the whole machine), byte 8 whether the put is measured (1) or warm-up (0).
 */

/** Bytes of the stamp: values shorter than this are lengthened to it. */
export const STAMP_BYTES = 9;

/** Nanoseconds since `epoch` (a `process.hrtime.bigint()` reading) on the machine's monotonic clock. */
export function sinceEpochNs(epoch: bigint): number {
  return Number(process.hrtime.bigint() - epoch);
}

/** A copy of `value` (at least STAMP_BYTES long) stamped with `sentNs` and `measured`. */
export function stampValue(value: Uint8Array, sentNs: number, measured: boolean): Uint8Array {
  const out = new Uint8Array(Math.max(STAMP_BYTES, value.length));
  out.set(value.subarray(0, out.length));
  const view = new DataView(out.buffer);
  view.setFloat64(0, sentNs, true);
  out[8] = measured ? 1 : 0;
  return out;
}

/** The stamp of a value: its send time, or undefined when it is a warm-up put or unstamped. */
export function measuredSentNs(value: Uint8Array): number | undefined {
  if (value.length < STAMP_BYTES || value[8] !== 1) return undefined;
  return new DataView(value.buffer, value.byteOffset, STAMP_BYTES).getFloat64(0, true);
}
