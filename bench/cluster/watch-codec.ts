/**
 * The Watch messages of etcd's v3 API (etcd 3.4's rpc.proto and kv.proto) that the watch
 * benchmarks send and read, hand-written so that a client process reading millions of
 * events spends its time on the wire, not on decoding:
 *
 * - WatchRequest { create_request = 1: WatchCreateRequest { key = 1; range_end = 2;
 *   start_revision = 3 } } (watch_id 0: the server picks it);
 * - WatchResponse { header = 1; watch_id = 2; created = 3; canceled = 4;
 *   compact_revision = 5; cancel_reason = 6; events = 11: Event { type = 1; kv = 2:
 *   KeyValue { mod_revision = 3; value = 5 } } }, read into a WatchSummary: the counts and
 *   the last event's mod_revision, and, when asked, each event's value.
 */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

export const ETCD_WATCH = "/etcdserverpb.Watch/Watch";

/** A WatchRequest creating a watcher of [key, rangeEnd) from `startRevision` (0: from now). */
export function encodeWatchCreate(
  key: Uint8Array,
  rangeEnd: Uint8Array,
  startRevision: number,
): Buffer {
  const w = new BinaryWriter().tag(1, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).bytes(key).tag(2, WireType.LengthDelimited).bytes(rangeEnd);
  if (startRevision > 0) w.tag(3, WireType.Varint).int64(startRevision);
  const bytes = w.join().finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** What one WatchResponse says. */
export interface WatchSummary {
  watchId: number;
  created: boolean;
  canceled: boolean;
  compactRevision: number;
  cancelReason: string;
  /** Events in the response. */
  events: number;
  /** The mod_revision of its last event (0 without events). */
  lastModRevision: number;
}

/** A read position in a message. */
class Cursor {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  /** A varint below 2^53 (revisions, lengths, tags, ids; negative ids read as large). */
  varint(): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new Error("watch response: truncated varint");
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
  }

  /** Skips the value of a field of wire type `type`. */
  skip(type: number): void {
    if (type === WireType.Varint) this.varint();
    else if (type === WireType.Bit64) this.pos += 8;
    else if (type === WireType.LengthDelimited) {
      const n = this.varint(); // before reading `pos`: `pos += varint()` would lose the advance
      this.pos += n;
    } else if (type === WireType.Bit32) this.pos += 4;
    else throw new Error(`watch response: wire type ${type} not expected`);
  }
}

/** The int64 watch ID -1 (etcd's "no watcher") as `varint` reads it: 2^64 - 1 rounded. */
const MINUS_ONE = 2 ** 64 - 1;

/**
 * Reads a WatchResponse. With `onValue`, each event's kv value is handed to it (a view of
 * `bytes`), in order. Throws on a malformed message.
 */
export function decodeWatchResponse(
  bytes: Uint8Array,
  onValue?: (value: Uint8Array) => void,
): WatchSummary {
  const c = new Cursor(bytes);
  const out: WatchSummary = {
    watchId: 0,
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: "",
    events: 0,
    lastModRevision: 0,
  };
  let lastFrom = -1;
  let lastTo = -1;
  while (c.pos < bytes.length) {
    const tag = c.varint();
    const no = Math.floor(tag / 8);
    const type = tag & 7;
    if (no === 2 && type === WireType.Varint) {
      const id = c.varint();
      out.watchId = id >= MINUS_ONE ? -1 : id;
    } else if (no === 3 && type === WireType.Varint) out.created = c.varint() !== 0;
    else if (no === 4 && type === WireType.Varint) out.canceled = c.varint() !== 0;
    else if (no === 5 && type === WireType.Varint) out.compactRevision = c.varint();
    else if (no === 6 && type === WireType.LengthDelimited) {
      const n = c.varint();
      out.cancelReason = new TextDecoder().decode(bytes.subarray(c.pos, c.pos + n));
      c.pos += n;
    } else if (no === 11 && type === WireType.LengthDelimited) {
      out.events++;
      const n = c.varint();
      if (onValue !== undefined) {
        const value = eventKv(bytes, c.pos, c.pos + n).value;
        if (value !== undefined) onValue(value);
      }
      lastFrom = c.pos;
      c.pos += n;
      lastTo = c.pos;
    } else c.skip(type);
  }
  if (c.pos !== bytes.length) throw new Error("watch response: a field runs past the message");
  if (lastFrom >= 0) out.lastModRevision = eventKv(bytes, lastFrom, lastTo).modRevision;
  return out;
}

/** The kv's mod_revision and value of the Event in bytes[from, to). */
function eventKv(
  bytes: Uint8Array,
  from: number,
  to: number,
): { modRevision: number; value: Uint8Array | undefined } {
  const c = new Cursor(bytes);
  c.pos = from;
  let modRevision = 0;
  let value: Uint8Array | undefined;
  while (c.pos < to) {
    const tag = c.varint();
    if (tag !== ((2 << 3) | WireType.LengthDelimited)) {
      c.skip(tag & 7);
      continue;
    }
    const end = c.varint() + c.pos;
    while (c.pos < end) {
      const t = c.varint();
      if (t === ((3 << 3) | WireType.Varint)) modRevision = c.varint();
      else if (t === ((5 << 3) | WireType.LengthDelimited)) {
        const n = c.varint();
        value = bytes.subarray(c.pos, c.pos + n);
        c.pos += n;
      } else c.skip(t & 7);
    }
  }
  return { modRevision, value };
}
