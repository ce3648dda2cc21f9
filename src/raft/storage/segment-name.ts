/**
 * Names of the files in a Raft log directory (docs/format/raft-log.md, "Files"):
 * `segment-<seq>.log` with the sequence number in 16 decimal digits (so that names sort
 * in sequence order), `segment-<seq>.log.damaged` for a segment set aside by recovery, and
 * `LOCK`.
 */

/** The lock file of the directory. */
export const LOCK_FILE_NAME = "LOCK";

/** Appended to a segment's name when recovery sets it aside (never read again). */
export const DAMAGED_SUFFIX = ".damaged";

const SEGMENT_NAME = /^segment-(\d{16})\.log$/;
const DAMAGED_NAME = /^segment-(\d{16})\.log\.damaged$/;

/** `segment-0000000000000007.log` for seq 7 (a positive safe integer). */
export function segmentFileName(seq: number): string {
  return `segment-${String(seq).padStart(16, "0")}.log`;
}

/** The sequence number of a segment file name, or undefined for any other name. */
export function parseSegmentFileName(name: string): number | undefined {
  const m = SEGMENT_NAME.exec(name);
  if (m === null) return undefined;
  const seq = Number(m[1]);
  return seq > 0 ? seq : undefined;
}

/** The sequence number of a segment set aside as damaged, or undefined. */
export function parseDamagedSegmentFileName(name: string): number | undefined {
  const m = DAMAGED_NAME.exec(name);
  return m === null ? undefined : Number(m[1]);
}
