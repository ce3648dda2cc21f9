/**
 * Binary encodings of the Raft core's structures: entries, hard state, configurations,
 * snapshots, membership changes and messages. docs/format/raft-codec.md specifies them
 * (codec version 1); entries and hard state are stored in the Raft log with these bytes,
 * messages travel between nodes with them.
 *
 * Integers are unsigned LEB128 varints (values below 2^53); byte strings are a varint
 * length followed by the bytes. Decoders check every length against the bytes left and
 * throw RaftError MALFORMED on anything that does not decode; they never read past the
 * input. Decoded byte strings are views (`subarray`) of the input: the caller must not
 * reuse the input buffer while they are alive.
 */

import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import { RaftError } from "./errors.js";
import type {
  ConfChange,
  ConfChangeType,
  ConfState,
  Entry,
  EntryType,
  HardState,
  Message,
  MessageType,
  NodeId,
  Snapshot,
  SnapshotMetadata,
} from "./types.js";

/** The version byte that starts every encoded message and membership change. */
export const CODEC_VERSION = 1;

// Wire codes: append-only lists, never reordered (do not change: stored and sent).
const ENTRY_TYPES: readonly EntryType[] = ["normal", "confChange"];
const CONF_CHANGE_TYPES: readonly ConfChangeType[] = ["addVoter", "addLearner", "removeNode"];
const MESSAGE_TYPES: readonly MessageType[] = [
  "hup",
  "beat",
  "checkQuorum",
  "prop",
  "app",
  "appResp",
  "vote",
  "voteResp",
  "preVote",
  "preVoteResp",
  "snap",
  "heartbeat",
  "heartbeatResp",
  "unreachable",
  "snapStatus",
  "transferLeader",
  "timeoutNow",
  "readIndex",
  "readIndexResp",
];

const FLAG_REJECT = 1;
const FLAG_SNAPSHOT = 2;

function codeOf<T>(list: readonly T[], value: T, what: string): number {
  const code = list.indexOf(value);
  if (code < 0) throw new RaftError("INVALID_ARGUMENT", `unknown ${what} ${String(value)}`);
  return code;
}

/** A writer that grows its buffer by doubling. */
export class ByteWriter {
  private buf: Uint8Array;
  private pos = 0;

  constructor(initialSize = 64) {
    this.buf = new Uint8Array(initialSize);
  }

  private reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  u8(v: number): this {
    this.reserve(1);
    this.buf[this.pos++] = v;
    return this;
  }

  varint(v: number): this {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new RaftError("INVALID_ARGUMENT", `not a non-negative safe integer: ${v}`);
    }
    this.reserve(varintLength(v));
    this.pos = putVarint(this.buf, this.pos, v);
    return this;
  }

  bytes(b: Uint8Array): this {
    this.varint(b.length);
    this.reserve(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /** The bytes written so far (a view of the writer's buffer). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/** A bounds-checked reader; every failure is RaftError MALFORMED naming `what`. */
export class ByteReader {
  private pos = 0;
  private readonly slot: VarintResult = { value: 0, offset: 0 };

  constructor(
    private readonly src: Uint8Array,
    private readonly what: string,
  ) {}

  private fail(reason: string): never {
    throw new RaftError("MALFORMED", `${this.what}: ${reason} at byte ${this.pos}`);
  }

  u8(): number {
    if (this.pos >= this.src.length) this.fail("input ends");
    return this.src[this.pos++]!;
  }

  varint(): number {
    try {
      getVarint(this.src, this.pos, this.slot);
    } catch (err) {
      this.fail((err as Error).message);
    }
    this.pos = this.slot.offset;
    return this.slot.value;
  }

  bytes(): Uint8Array {
    const n = this.varint();
    if (n > this.src.length - this.pos) this.fail(`length ${n} past the end`);
    const out = this.src.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A count of items each taking at least `minBytes`, checked against the bytes left. */
  count(minBytes: number): number {
    const n = this.varint();
    if (n * minBytes > this.src.length - this.pos) this.fail(`count ${n} past the end`);
    return n;
  }

  oneOf<T>(list: readonly T[], what: string): T {
    const code = this.u8();
    const v = list[code];
    if (v === undefined) this.fail(`unknown ${what} ${code}`);
    return v;
  }

  /** Throws unless every byte was consumed. */
  end(): void {
    if (this.pos !== this.src.length) this.fail(`${this.src.length - this.pos} trailing bytes`);
  }
}

// ---- writers ----

export function writeEntry(w: ByteWriter, e: Entry): void {
  w.varint(e.term)
    .varint(e.index)
    .u8(codeOf(ENTRY_TYPES, e.type, "entry type"))
    .bytes(e.data);
}

export function writeHardState(w: ByteWriter, hs: HardState): void {
  w.varint(hs.term).varint(hs.vote).varint(hs.commit);
}

export function writeConfState(w: ByteWriter, cs: ConfState): void {
  w.varint(cs.voters.length);
  for (const id of cs.voters) w.varint(id);
  w.varint(cs.learners.length);
  for (const id of cs.learners) w.varint(id);
}

export function writeSnapshotMetadata(w: ByteWriter, m: SnapshotMetadata): void {
  w.varint(m.index).varint(m.term);
  writeConfState(w, m.confState);
}

export function writeSnapshot(w: ByteWriter, s: Snapshot): void {
  writeSnapshotMetadata(w, s.metadata);
  w.bytes(s.data);
}

// ---- readers ----

export function readEntry(r: ByteReader): Entry {
  const term = r.varint();
  const index = r.varint();
  const type = r.oneOf(ENTRY_TYPES, "entry type");
  const data = r.bytes();
  return { term, index, type, data };
}

export function readHardState(r: ByteReader): HardState {
  const term = r.varint();
  const vote = r.varint();
  const commit = r.varint();
  return { term, vote, commit };
}

function readIds(r: ByteReader): NodeId[] {
  const n = r.count(1);
  const ids: NodeId[] = [];
  for (let i = 0; i < n; i++) ids.push(r.varint());
  return ids;
}

export function readConfState(r: ByteReader): ConfState {
  const voters = readIds(r);
  const learners = readIds(r);
  return { voters, learners };
}

export function readSnapshotMetadata(r: ByteReader): SnapshotMetadata {
  const index = r.varint();
  const term = r.varint();
  const confState = readConfState(r);
  return { index, term, confState };
}

export function readSnapshot(r: ByteReader): Snapshot {
  const metadata = readSnapshotMetadata(r);
  const data = r.bytes();
  return { metadata, data };
}

// ---- whole structures ----

/** One entry, alone (the Raft log stores entries this way). */
export function encodeEntry(e: Entry): Uint8Array {
  const w = new ByteWriter(16 + e.data.length);
  writeEntry(w, e);
  return w.finish();
}

export function decodeEntry(bytes: Uint8Array): Entry {
  const r = new ByteReader(bytes, "entry");
  const e = readEntry(r);
  r.end();
  return e;
}

export function encodeHardState(hs: HardState): Uint8Array {
  const w = new ByteWriter(24);
  writeHardState(w, hs);
  return w.finish();
}

export function decodeHardState(bytes: Uint8Array): HardState {
  const r = new ByteReader(bytes, "hard state");
  const hs = readHardState(r);
  r.end();
  return hs;
}

export function encodeSnapshotMetadata(m: SnapshotMetadata): Uint8Array {
  const w = new ByteWriter();
  writeSnapshotMetadata(w, m);
  return w.finish();
}

export function decodeSnapshotMetadata(bytes: Uint8Array): SnapshotMetadata {
  const r = new ByteReader(bytes, "snapshot metadata");
  const m = readSnapshotMetadata(r);
  r.end();
  return m;
}

/** A membership change, as carried in a "confChange" entry's data. */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  const w = new ByteWriter(16 + cc.context.length);
  w.u8(CODEC_VERSION).u8(codeOf(CONF_CHANGE_TYPES, cc.type, "conf change type"));
  w.varint(cc.nodeId).bytes(cc.context);
  return w.finish();
}

export function decodeConfChange(bytes: Uint8Array): ConfChange {
  const r = new ByteReader(bytes, "conf change");
  const version = r.u8();
  if (version !== CODEC_VERSION) {
    throw new RaftError("MALFORMED", `conf change: codec version ${version} is not supported`);
  }
  const type = r.oneOf(CONF_CHANGE_TYPES, "conf change type");
  const nodeId = r.varint();
  const context = r.bytes();
  r.end();
  return { type, nodeId, context };
}

/** A message, for the wire. */
export function encodeMessage(m: Message): Uint8Array {
  let size = 64 + m.context.length;
  for (const e of m.entries) size += 24 + e.data.length;
  if (m.snapshot !== undefined) size += 64 + m.snapshot.data.length;
  const w = new ByteWriter(size);
  w.u8(CODEC_VERSION).u8(codeOf(MESSAGE_TYPES, m.type, "message type"));
  w.varint(m.to).varint(m.from).varint(m.term).varint(m.logTerm).varint(m.index);
  w.varint(m.commit).varint(m.rejectHint);
  w.u8((m.reject ? FLAG_REJECT : 0) | (m.snapshot !== undefined ? FLAG_SNAPSHOT : 0));
  w.bytes(m.context);
  w.varint(m.entries.length);
  for (const e of m.entries) writeEntry(w, e);
  if (m.snapshot !== undefined) writeSnapshot(w, m.snapshot);
  return w.finish();
}

export function decodeMessage(bytes: Uint8Array): Message {
  const r = new ByteReader(bytes, "message");
  const version = r.u8();
  if (version !== CODEC_VERSION) {
    throw new RaftError("MALFORMED", `message: codec version ${version} is not supported`);
  }
  const type = r.oneOf(MESSAGE_TYPES, "message type");
  const to = r.varint();
  const from = r.varint();
  const term = r.varint();
  const logTerm = r.varint();
  const index = r.varint();
  const commit = r.varint();
  const rejectHint = r.varint();
  const flags = r.u8();
  if ((flags & ~(FLAG_REJECT | FLAG_SNAPSHOT)) !== 0) {
    throw new RaftError("MALFORMED", `message: unknown flags ${flags}`);
  }
  const context = r.bytes();
  const n = r.count(4);
  const entries: Entry[] = [];
  for (let i = 0; i < n; i++) entries.push(readEntry(r));
  const snapshot = (flags & FLAG_SNAPSHOT) !== 0 ? readSnapshot(r) : undefined;
  r.end();
  return {
    type,
    to,
    from,
    term,
    logTerm,
    index,
    entries,
    commit,
    snapshot,
    reject: (flags & FLAG_REJECT) !== 0,
    rejectHint,
    context,
  };
}
