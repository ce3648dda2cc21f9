/**
 * The records of the durable Raft log (raft log format version 1), specified in
 * docs/format/raft-log.md. Each record is the payload of one WAL record (framing:
 * docs/format/wal.md); entries, hard state and snapshots inside use the codec of
 * docs/format/raft-codec.md.
 *
 * Grammar:
 *
 *   record   := version:u8(=1) kind:u8 synced-end:varint last-index:varint hard-state body
 *   body     := header | save | snapshot | compact | close          (by kind 1..5)
 *   header   := seq:varint previous-seq:varint previous-end:varint
 *               compact-index:varint compact-term:varint last-term:varint
 *               repair-through:varint snapshot nentries:varint entry{nentries}
 *   save     := flags:u8 snapshot? nentries:varint entry{nentries}  (flags bit 0: snapshot)
 *   snapshot := snapshot                                            (the application's)
 *   compact  := index:varint term:varint
 *   close    := (nothing)
 *
 * Every record carries `synced-end` (the offset in its segment up to which the segment was
 * known durable when the record was written), and the log's last index and hard state as
 * of the record: what recovery needs to tell an unsynced tail from damage, and to keep the
 * term and vote when damage drops later records.
 *
 * Values here are stored on disk: do not change them. A change is a new format version.
 */

import {
  ByteReader,
  ByteWriter,
  readEntry,
  readHardState,
  readSnapshot,
  writeEntry,
  writeHardState,
  writeSnapshot,
} from "../codec.js";
import { RaftError } from "../errors.js";
import type { Entry, HardState, Snapshot } from "../types.js";

/** Version of the record layout above (docs/format/raft-log.md). Do not change. */
export const RAFT_LOG_FORMAT_VERSION = 1;

/** Record kinds. Do not change: stored on disk. */
const KIND_HEADER = 1;
const KIND_SAVE = 2;
const KIND_SNAPSHOT = 3;
const KIND_COMPACT = 4;
const KIND_CLOSE = 5;

const SAVE_FLAG_SNAPSHOT = 1;

/** Fields every record carries. */
interface RecordCommon {
  /** Offset in the record's segment up to which the segment was durable when it was written. */
  readonly syncedEnd: number;
  /** The log's last index once this record is applied. */
  readonly lastIndex: number;
  /** The hard state once this record is applied. */
  readonly hardState: HardState;
}

/**
 * The first record of every segment: the state of the log when the segment was started.
 * It is *self-contained* when `entries` holds every retained entry (compactIndex + 1 ..
 * lastIndex): recovery then needs no older segment.
 */
export interface HeaderRecord extends RecordCommon {
  readonly kind: "header";
  /** The segment's sequence number (its file name's). */
  readonly seq: number;
  /** The segment this one continues (0: none, the header is self-contained). */
  readonly previousSeq: number;
  /** Bytes of the previous segment that were durable and are part of the log. */
  readonly previousEnd: number;
  readonly compactIndex: number;
  readonly compactTerm: number;
  /** The term of the entry at lastIndex. */
  readonly lastTerm: number;
  /** Entries up to this index were durably acknowledged and must be re-fetched (0: none). */
  readonly repairThrough: number;
  readonly snapshot: Snapshot;
  /** The last entries of the log, ending at lastIndex (none, or all retained ones). */
  readonly entries: readonly Entry[];
}

/** One `save`: a snapshot to install (replacing the log), entries to append, hard state. */
export interface SaveRecord extends RecordCommon {
  readonly kind: "save";
  readonly snapshot: Snapshot | undefined;
  readonly entries: readonly Entry[];
}

/** The application's snapshot (`createSnapshot`); entries are unchanged. */
export interface SnapshotRecord extends RecordCommon {
  readonly kind: "snapshot";
  readonly snapshot: Snapshot;
}

/** Entries up to `index` (of term `term`) are compacted away. */
export interface CompactRecord extends RecordCommon {
  readonly kind: "compact";
  readonly index: number;
  readonly term: number;
}

/** A clean close: proves that every byte before it was synced. */
export interface CloseRecord extends RecordCommon {
  readonly kind: "close";
}

export type LogRecord = HeaderRecord | SaveRecord | SnapshotRecord | CompactRecord | CloseRecord;

function kindCode(kind: LogRecord["kind"]): number {
  switch (kind) {
    case "header":
      return KIND_HEADER;
    case "save":
      return KIND_SAVE;
    case "snapshot":
      return KIND_SNAPSHOT;
    case "compact":
      return KIND_COMPACT;
    case "close":
      return KIND_CLOSE;
  }
}

/** A size guess for the encoder's buffer: exact enough to avoid regrowing. */
function sizeHint(entries: readonly Entry[], snapshot: Snapshot | undefined): number {
  let n = 96;
  for (const e of entries) n += 20 + e.data.length;
  if (snapshot !== undefined) {
    const cs = snapshot.metadata.confState;
    n += 32 + snapshot.data.length + 9 * (cs.voters.length + cs.learners.length);
  }
  return n;
}

/**
 * The payload of one record. Throws RaftError INVALID_ARGUMENT for a value the codec
 * cannot store (a negative or unsafe integer, an unknown entry type).
 */
export function encodeLogRecord(record: LogRecord): Uint8Array {
  const entries = "entries" in record ? record.entries : [];
  const snapshot = "snapshot" in record ? record.snapshot : undefined;
  const w = new ByteWriter(sizeHint(entries, snapshot));
  w.u8(RAFT_LOG_FORMAT_VERSION).u8(kindCode(record.kind));
  w.varint(record.syncedEnd).varint(record.lastIndex);
  writeHardState(w, record.hardState);
  switch (record.kind) {
    case "header":
      w.varint(record.seq).varint(record.previousSeq).varint(record.previousEnd);
      w.varint(record.compactIndex).varint(record.compactTerm).varint(record.lastTerm);
      w.varint(record.repairThrough);
      writeSnapshot(w, record.snapshot);
      writeEntries(w, record.entries);
      break;
    case "save":
      w.u8(record.snapshot === undefined ? 0 : SAVE_FLAG_SNAPSHOT);
      if (record.snapshot !== undefined) writeSnapshot(w, record.snapshot);
      writeEntries(w, record.entries);
      break;
    case "snapshot":
      writeSnapshot(w, record.snapshot);
      break;
    case "compact":
      w.varint(record.index).varint(record.term);
      break;
    case "close":
      break;
  }
  return w.finish();
}

function writeEntries(w: ByteWriter, entries: readonly Entry[]): void {
  w.varint(entries.length);
  for (const e of entries) writeEntry(w, e);
}

function readEntries(r: ByteReader): Entry[] {
  const n = r.count(4);
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) out.push(readEntry(r));
  return out;
}

/** The format version byte of a record payload (undefined for an empty payload). */
export function logRecordVersion(payload: Uint8Array): number | undefined {
  return payload[0];
}

/**
 * Decodes a record of format version 1. Throws RaftError MALFORMED when the payload does
 * not decode (the caller checks the version first, with `logRecordVersion`). Entry data
 * and snapshot data are views of `payload`.
 */
export function decodeLogRecord(payload: Uint8Array): LogRecord {
  const r = new ByteReader(payload, "raft log record");
  const version = r.u8();
  if (version !== RAFT_LOG_FORMAT_VERSION) {
    throw new RaftError("MALFORMED", `raft log record: format version ${version} is not supported`);
  }
  const kind = r.u8();
  const syncedEnd = r.varint();
  const lastIndex = r.varint();
  const hardState = readHardState(r);
  let record: LogRecord;
  switch (kind) {
    case KIND_HEADER: {
      const seq = r.varint();
      const previousSeq = r.varint();
      const previousEnd = r.varint();
      const compactIndex = r.varint();
      const compactTerm = r.varint();
      const lastTerm = r.varint();
      const repairThrough = r.varint();
      const snapshot = readSnapshot(r);
      const entries = readEntries(r);
      record = {
        kind: "header",
        syncedEnd,
        lastIndex,
        hardState,
        seq,
        previousSeq,
        previousEnd,
        compactIndex,
        compactTerm,
        lastTerm,
        repairThrough,
        snapshot,
        entries,
      };
      break;
    }
    case KIND_SAVE: {
      const flags = r.u8();
      if ((flags & ~SAVE_FLAG_SNAPSHOT) !== 0) {
        throw new RaftError("MALFORMED", `raft log record: unknown save flags ${flags}`);
      }
      const snapshot = (flags & SAVE_FLAG_SNAPSHOT) !== 0 ? readSnapshot(r) : undefined;
      const entries = readEntries(r);
      record = { kind: "save", syncedEnd, lastIndex, hardState, snapshot, entries };
      break;
    }
    case KIND_SNAPSHOT:
      record = { kind: "snapshot", syncedEnd, lastIndex, hardState, snapshot: readSnapshot(r) };
      break;
    case KIND_COMPACT: {
      const index = r.varint();
      const term = r.varint();
      record = { kind: "compact", syncedEnd, lastIndex, hardState, index, term };
      break;
    }
    case KIND_CLOSE:
      record = { kind: "close", syncedEnd, lastIndex, hardState };
      break;
    default:
      throw new RaftError("MALFORMED", `raft log record: unknown kind ${kind}`);
  }
  r.end();
  return record;
}
