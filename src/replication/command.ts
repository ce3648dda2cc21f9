/**
 * The payloads of the replicated store's Raft entries (docs/format/replicated-store.md,
 * "Entries"). A normal entry's data is one command:
 *
 *   command := version:u8 kind:u8 proposer:varint request:varint session body
 *   session := (version 1: nothing)
 *            | (version 2) id:varint [seq:varint ackedBelow:varint, iff id != 0]
 *   kind 1 (write):   body = an encoded WriteBatch of user keys (docs/format/write-batch.md)
 *   kind 2 (cas):     body = keyLen:varint key  expected  next
 *                     expected, next := 0:u8 (absent / delete) | 1:u8 len:varint bytes
 *   kind 3 (publish): body = nameLen:varint name  addrLen:varint clientAddress (UTF-8)
 *   kind 4 (open a client session, version 2):  body = empty
 *   kind 5 (cluster clock, version 2):          body = elapsedMs:varint
 *   kind 6 (a multi-version request):           body = the request (mvcc-request.ts)
 *   kind 7 (give the store revisions):           body = empty (applier.ts: the store's
 *                                                 plain keys become revision 1)
 *
 * Commands without a client session are written in version 1, so that a cluster whose
 * clients open no session writes what older members read. `proposer` is the proposing
 * member's ID and `request` its request ID: the proposer answers its caller when it
 * applies the entry that carries them. Empty data is the no-op a new leader appends. A
 * conf-change entry's context is JSON: `{ proposer, request, member? }` (member: the
 * MemberInfo of an added member).
 */
import { KvError } from "../errors.js";
import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import { decodeMemberInfo, isMemberId, type MemberId, type MemberInfo } from "./members.js";
import type { SessionCall } from "./session-table.js";

const VERSION_1 = 1;
/** Version 2: the header carries a client session (docs/format/replicated-store.md). */
const VERSION_2 = 2;
const KIND_WRITE = 1;
const KIND_CAS = 2;
const KIND_PUBLISH = 3;
const KIND_OPEN_SESSION = 4;
const KIND_CLOCK = 5;
const KIND_REQUEST = 6;
const KIND_UPGRADE = 7;

export type Command =
  | {
      readonly kind: "write";
      readonly proposer: MemberId;
      readonly request: number;
      readonly session: SessionCall | undefined;
      /** The encoded WriteBatch (user keys). */
      readonly batch: Uint8Array;
    }
  | {
      readonly kind: "cas";
      readonly proposer: MemberId;
      readonly request: number;
      readonly session: SessionCall | undefined;
      readonly key: Uint8Array;
      readonly expected: Uint8Array | undefined;
      readonly next: Uint8Array | undefined;
    }
  | {
      readonly kind: "publish";
      readonly proposer: MemberId;
      readonly request: number;
      readonly name: string;
      readonly clientAddress: string;
    }
  | { readonly kind: "openSession"; readonly proposer: MemberId; readonly request: number }
  | {
      /** Converts a store of the first layout to revisions (a no-op on one that has them). */
      readonly kind: "upgrade";
      readonly proposer: MemberId;
      readonly request: number;
    }
  | {
      readonly kind: "request";
      readonly proposer: MemberId;
      readonly request: number;
      /** A multi-version request (the etcd API's writes and compactions), encoded. */
      readonly body: Uint8Array;
    }
  | {
      readonly kind: "clock";
      readonly proposer: MemberId;
      readonly request: number;
      /** Milliseconds the leader measured since its previous clock entry. */
      readonly elapsedMs: number;
    };

/** Bytes of the command header before the body (version 2 iff `session` is given). */
function headerLength(proposer: number, request: number, session?: SessionCall | null): number {
  let n = 2 + varintLength(proposer) + varintLength(request);
  if (session === null) n += 1;
  else if (session !== undefined)
    n += varintLength(session.id) + varintLength(session.seq) + varintLength(session.ackedBelow);
  return n;
}

/**
 * Writes the header; returns where the body starts. `session`: undefined for version 1,
 * null for version 2 without a session, else the session of a version 2 command.
 */
function header(
  dst: Uint8Array,
  kind: number,
  proposer: number,
  request: number,
  session?: SessionCall | null,
): number {
  dst[0] = session === undefined ? VERSION_1 : VERSION_2;
  dst[1] = kind;
  let at = putVarint(dst, putVarint(dst, 2, proposer), request);
  if (session === null) return putVarint(dst, at, 0);
  if (session !== undefined) {
    at = putVarint(dst, at, session.id);
    at = putVarint(dst, at, session.seq);
    at = putVarint(dst, at, session.ackedBelow);
  }
  return at;
}

export function encodeWrite(
  proposer: MemberId,
  request: number,
  batch: Uint8Array,
  session?: SessionCall,
): Uint8Array {
  const out = Buffer.allocUnsafe(headerLength(proposer, request, session) + batch.length);
  out.set(batch, header(out, KIND_WRITE, proposer, request, session));
  return out;
}

/** A multi-version request (`body`, src/mvcc/requests/replicated-request.ts). */
export function encodeRequest(proposer: MemberId, request: number, body: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(headerLength(proposer, request) + body.length);
  out.set(body, header(out, KIND_REQUEST, proposer, request));
  return out;
}

/** Gives the store revisions (applier.ts). */
export function encodeUpgrade(proposer: MemberId, request: number): Uint8Array {
  const out = Buffer.allocUnsafe(headerLength(proposer, request));
  header(out, KIND_UPGRADE, proposer, request);
  return out;
}

/** Opens a client session: the entry's index becomes its ID. */
export function encodeOpenSession(proposer: MemberId, request: number): Uint8Array {
  const out = Buffer.allocUnsafe(headerLength(proposer, request, null));
  header(out, KIND_OPEN_SESSION, proposer, request, null);
  return out;
}

/** A leader's clock entry: `elapsedMs` of its monotonic clock since its previous one. */
export function encodeClock(proposer: MemberId, elapsedMs: number): Uint8Array {
  const out = Buffer.allocUnsafe(headerLength(proposer, 0, null) + varintLength(elapsedMs));
  putVarint(out, header(out, KIND_CLOCK, proposer, 0, null), elapsedMs);
  return out;
}

function optionalLength(v: Uint8Array | undefined): number {
  return v === undefined ? 1 : 1 + varintLength(v.length) + v.length;
}

function putOptional(dst: Uint8Array, at: number, v: Uint8Array | undefined): number {
  if (v === undefined) {
    dst[at] = 0;
    return at + 1;
  }
  dst[at] = 1;
  at = putVarint(dst, at + 1, v.length);
  dst.set(v, at);
  return at + v.length;
}

export function encodeCas(
  proposer: MemberId,
  request: number,
  key: Uint8Array,
  expected: Uint8Array | undefined,
  next: Uint8Array | undefined,
  session?: SessionCall,
): Uint8Array {
  const size =
    headerLength(proposer, request, session) +
    varintLength(key.length) +
    key.length +
    optionalLength(expected) +
    optionalLength(next);
  const out = Buffer.allocUnsafe(size);
  let at = putVarint(out, header(out, KIND_CAS, proposer, request, session), key.length);
  out.set(key, at);
  at = putOptional(out, at + key.length, expected);
  putOptional(out, at, next);
  return out;
}

export function encodePublish(
  proposer: MemberId,
  request: number,
  name: string,
  clientAddress: string,
): Uint8Array {
  const n = Buffer.from(name, "utf8");
  const a = Buffer.from(clientAddress, "utf8");
  const size =
    headerLength(proposer, request) +
    varintLength(n.length) +
    n.length +
    varintLength(a.length) +
    a.length;
  const out = Buffer.allocUnsafe(size);
  let at = putVarint(out, header(out, KIND_PUBLISH, proposer, request), n.length);
  out.set(n, at);
  at = putVarint(out, at + n.length, a.length);
  out.set(a, at);
  return out;
}

const vr: VarintResult = { value: 0, offset: 0 };

function malformed(what: string): KvError {
  return new KvError("CORRUPTION", `malformed replicated entry: ${what}`);
}

/** Reads `n` bytes at `at` (a view), checking bounds. */
function take(data: Uint8Array, at: number, n: number): Uint8Array {
  if (at + n > data.length) throw malformed("length past the end");
  return data.subarray(at, at + n);
}

function readOptional(data: Uint8Array, at: number): [Uint8Array | undefined, number] {
  const flag = data[at];
  if (flag === 0) return [undefined, at + 1];
  if (flag !== 1) throw malformed(`bad presence flag ${String(flag)}`);
  getVarint(data, at + 1, vr);
  const start = vr.offset;
  return [take(data, start, vr.value), start + vr.value];
}

/**
 * Decodes a normal entry's data (non-empty). Views into `data`, no copies. Throws KvError
 * CORRUPTION for bytes that do not decode (an entry of a newer version included).
 */
export function decodeCommand(data: Uint8Array): Command {
  try {
    const version = data[0];
    if (data.length < 2 || (version !== VERSION_1 && version !== VERSION_2)) {
      throw malformed(`unknown version ${String(version)}`);
    }
    const kind = data[1];
    getVarint(data, 2, vr);
    const proposer = vr.value;
    getVarint(data, vr.offset, vr);
    const request = vr.value;
    let at = vr.offset;
    let session: SessionCall | undefined;
    if (version === VERSION_2) {
      getVarint(data, at, vr);
      const id = vr.value;
      at = vr.offset;
      if (id !== 0) {
        getVarint(data, at, vr);
        const seq = vr.value;
        getVarint(data, vr.offset, vr);
        session = { id, seq, ackedBelow: vr.value };
        at = vr.offset;
      }
    } else if (kind === KIND_OPEN_SESSION || kind === KIND_CLOCK) {
      throw malformed(`kind ${kind} in a version 1 command`);
    }
    switch (kind) {
      case KIND_WRITE:
        return { kind: "write", proposer, request, session, batch: data.subarray(at) };
      case KIND_CAS: {
        getVarint(data, at, vr);
        const key = take(data, vr.offset, vr.value);
        at = vr.offset + vr.value;
        const [expected, after] = readOptional(data, at);
        const [next, end] = readOptional(data, after);
        if (end !== data.length) throw malformed("trailing bytes after a cas");
        return { kind: "cas", proposer, request, session, key, expected, next };
      }
      case KIND_PUBLISH: {
        getVarint(data, at, vr);
        const name = Buffer.from(take(data, vr.offset, vr.value)).toString("utf8");
        at = vr.offset + vr.value;
        getVarint(data, at, vr);
        const clientAddress = Buffer.from(take(data, vr.offset, vr.value)).toString("utf8");
        return { kind: "publish", proposer, request, name, clientAddress };
      }
      case KIND_REQUEST:
        return { kind: "request", proposer, request, body: data.subarray(at) };
      case KIND_UPGRADE:
        if (at !== data.length) throw malformed("trailing bytes after an upgrade");
        return { kind: "upgrade", proposer, request };
      case KIND_OPEN_SESSION:
        if (at !== data.length) throw malformed("trailing bytes after a session open");
        return { kind: "openSession", proposer, request };
      case KIND_CLOCK:
        getVarint(data, at, vr);
        if (vr.offset !== data.length) throw malformed("trailing bytes after a clock");
        return { kind: "clock", proposer, request, elapsedMs: vr.value };
      default:
        throw malformed(`unknown kind ${String(kind)}`);
    }
  } catch (err) {
    if (err instanceof RangeError) throw malformed(err.message);
    throw err;
  }
}

/** The context of a membership change entry. */
export interface ChangeContext {
  readonly proposer: MemberId;
  readonly request: number;
  /** For an added (or promoted) member: its record. */
  readonly member: MemberInfo | undefined;
}

export function encodeChangeContext(c: ChangeContext): Uint8Array {
  const o: Record<string, unknown> = { proposer: c.proposer, request: c.request };
  if (c.member !== undefined) o["member"] = c.member;
  return Buffer.from(JSON.stringify(o));
}

/** Decodes a conf change's context; an empty one (a change made by hand) is no proposer. */
export function decodeChangeContext(bytes: Uint8Array): ChangeContext {
  if (bytes.length === 0) return { proposer: 0, request: 0, member: undefined };
  let o: { proposer?: unknown; request?: unknown; member?: unknown };
  try {
    o = JSON.parse(Buffer.from(bytes).toString("utf8")) as typeof o;
  } catch (err) {
    throw new KvError("CORRUPTION", "membership change context is not JSON", { cause: err });
  }
  const proposer = o.proposer === 0 || isMemberId(o.proposer) ? o.proposer : undefined;
  const request =
    typeof o.request === "number" && Number.isSafeInteger(o.request) ? o.request : undefined;
  if (proposer === undefined || request === undefined) {
    throw new KvError("CORRUPTION", "membership change context lacks proposer or request");
  }
  const member = o.member === undefined ? undefined : decodeMemberInfo(o.member);
  return { proposer, request, member };
}
