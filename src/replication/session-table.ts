/**
 * Client sessions of the replicated state machine (Raft thesis 6.3, in its concurrent
 * form; docs/cluster.md, "Retries that apply once"). A client opens a session through the
 * log (its ID is the index of the entry that opened it) and numbers its writes; each write
 * carries its session, its sequence number and the lowest sequence number the client has
 * not yet seen answered (`ackedBelow`). The table keeps each session's results at or
 * above that mark, so a write that already applied and is sent again returns its first
 * result and changes nothing, whatever order the client's concurrent writes apply in.
 *
 * Time is the cluster's: `clock` entries stamped by the leader (milliseconds of leadership
 * it measured on its monotonic clock) advance it; it never passes while no leader runs. A
 * session idle (no write, no open) for more than `ttlMs` of cluster time expires at the
 * clock entry that finds it so; opening a session beyond `maxSessions` evicts the least
 * recently active one. A write of an unknown or expired session is refused
 * (SESSION_EXPIRED), never applied blind.
 *
 * Every decision is a pure function of the entries applied, so every member computes the
 * same table. The table is mirrored in the member's store under internal keys
 * (sessionKey, resultKey, CLOCK_KEY; docs/format/replicated-store.md) in the batch of the
 * entry that changed it, so it survives restarts and travels in snapshots.
 */
import type { CasResult, ClientSessionCall } from "../db/kv-backend.js";
import { KvError } from "../errors.js";
import {
  getFixed64,
  getVarint,
  putFixed64,
  putVarint,
  type VarintResult,
  varintLength,
} from "../util/coding.js";

/** What a write of a session carries (the backend seam's ClientSessionCall). */
export type SessionCall = ClientSessionCall;

/** Bounds of the table (replicated: every member must use the same values). */
export interface SessionLimits {
  /** Cluster milliseconds a session may stay idle before it expires. */
  readonly ttlMs: number;
  /** Sessions kept; opening one more evicts the least recently active. */
  readonly maxSessions: number;
  /** Results kept per session (writes not yet acknowledged by the client). */
  readonly maxResults: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  ttlMs: 120_000,
  maxSessions: 10_000,
  maxResults: 4096,
};

/**
 * A write's result as kept for a retry: `undefined` for a put, delete or batch; the
 * compare-and-swap's answer for a CAS (filled in when the CAS is decided).
 */
export interface KeptResult {
  cas: CasResult | undefined;
}

interface Session {
  readonly id: number;
  lastActive: number;
  ackedBelow: number;
  readonly results: Map<number, KeptResult>;
}

/** How a write of a session is to be applied. */
export type SessionVerdict =
  /** A new write: apply it, then fill `kept` with its result (a CAS's, when decided). */
  | { readonly kind: "apply"; readonly kept: KeptResult }
  /** Applied before: change nothing, answer with the kept result. */
  | { readonly kind: "duplicate"; readonly kept: KeptResult }
  /** Refused: change nothing, answer with `error`. */
  | { readonly kind: "refused"; readonly error: KvError };

/** Where the table's changes go: the batch of the entry being applied. */
export interface SessionSink {
  put(key: Uint8Array, value: Uint8Array): void;
  delete(key: Uint8Array): void;
}

const INTERNAL = 0x00;
const SESSION_TAG = Buffer.from("session/", "latin1");
const RESULT_TAG = Buffer.from("result/", "latin1");

/** `0x00 "clock"`: the cluster time in milliseconds (fixed64). */
export const CLOCK_KEY: Uint8Array = Buffer.from("\x00clock", "latin1");
/** The prefix of every session record: `0x00 "session/"`. */
export const SESSION_PREFIX: Uint8Array = Buffer.concat([Buffer.from([INTERNAL]), SESSION_TAG]);
/** The prefix of every kept result: `0x00 "result/"`. */
export const RESULT_PREFIX: Uint8Array = Buffer.concat([Buffer.from([INTERNAL]), RESULT_TAG]);
/**
 * The end of the table's stored keys: every key of the table is in [CLOCK_KEY,
 * SESSION_STATE_END) ("clock" < "result/" < "session/" < "session0"); `load` skips the
 * other internal keys there ("members").
 */
export const SESSION_STATE_END: Uint8Array = Buffer.from("\x00session0", "latin1");

function putBigEndian64(dst: Uint8Array, at: number, v: number): void {
  const view = new DataView(dst.buffer, dst.byteOffset, dst.byteLength);
  view.setUint32(at, Math.floor(v / 2 ** 32));
  view.setUint32(at + 4, v >>> 0);
}

function getBigEndian64(src: Uint8Array, at: number): number {
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  return view.getUint32(at) * 2 ** 32 + view.getUint32(at + 4);
}

/** `0x00 "session/" id:u64 big-endian` (so that records sort by ID). */
export function sessionKey(id: number): Uint8Array {
  const out = new Uint8Array(SESSION_PREFIX.length + 8);
  out.set(SESSION_PREFIX, 0);
  putBigEndian64(out, SESSION_PREFIX.length, id);
  return out;
}

/** `0x00 "result/" id:u64 seq:u64`, both big-endian. */
export function resultKey(id: number, seq: number): Uint8Array {
  const out = new Uint8Array(RESULT_PREFIX.length + 16);
  out.set(RESULT_PREFIX, 0);
  putBigEndian64(out, RESULT_PREFIX.length, id);
  putBigEndian64(out, RESULT_PREFIX.length + 8, seq);
  return out;
}

/** A session record: lastActive:varint ackedBelow:varint. */
function encodeSession(s: Session): Uint8Array {
  const out = new Uint8Array(varintLength(s.lastActive) + varintLength(s.ackedBelow));
  putVarint(out, putVarint(out, 0, s.lastActive), s.ackedBelow);
  return out;
}

/**
 * A kept result: `00` (a put, delete or batch) or `01 applied:u8 found:u8
 * [len:varint value]` (a compare-and-swap's answer).
 */
export function encodeKept(kept: KeptResult): Uint8Array {
  const cas = kept.cas;
  if (cas === undefined) return new Uint8Array([0]);
  const v = cas.current;
  const out = new Uint8Array(3 + (v === undefined ? 0 : varintLength(v.length) + v.length));
  out[0] = 1;
  out[1] = cas.applied ? 1 : 0;
  out[2] = v === undefined ? 0 : 1;
  if (v !== undefined) out.set(v, putVarint(out, 3, v.length));
  return out;
}

const vr: VarintResult = { value: 0, offset: 0 };

function corrupt(what: string): KvError {
  return new KvError("CORRUPTION", `stored client session state: ${what}`);
}

export function decodeKept(bytes: Uint8Array): KeptResult {
  if (bytes[0] === 0 && bytes.length === 1) return { cas: undefined };
  if (bytes[0] !== 1 || bytes.length < 3) throw corrupt("a kept result of unknown form");
  const applied = bytes[1] === 1;
  if (bytes[2] === 0) return { cas: { applied, current: undefined } };
  getVarint(bytes, 3, vr);
  if (vr.offset + vr.value !== bytes.length) throw corrupt("a kept result's length");
  return { cas: { applied, current: Buffer.from(bytes.subarray(vr.offset)) } };
}

export class SessionTable {
  /** Cluster time in milliseconds (advanced by clock entries). */
  clusterTime = 0;
  private readonly sessions = new Map<number, Session>();

  constructor(readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS) {}

  get size(): number {
    return this.sessions.size;
  }

  has(id: number): boolean {
    return this.sessions.has(id);
  }

  /** Opens session `id` (the index of the entry opening it); may evict the least active. */
  open(id: number, sink: SessionSink): void {
    if (this.sessions.has(id)) return;
    if (this.sessions.size >= this.limits.maxSessions) {
      let oldest: Session | undefined;
      for (const s of this.sessions.values()) {
        if (
          oldest === undefined ||
          s.lastActive < oldest.lastActive ||
          (s.lastActive === oldest.lastActive && s.id < oldest.id)
        )
          oldest = s;
      }
      if (oldest !== undefined) this.drop(oldest, sink);
    }
    const s: Session = { id, lastActive: this.clusterTime, ackedBelow: 1, results: new Map() };
    this.sessions.set(id, s);
    sink.put(sessionKey(id), encodeSession(s));
  }

  /** A clock entry: the leader measured `elapsedMs` more; expires idle sessions. */
  advance(elapsedMs: number, sink: SessionSink): void {
    if (!(elapsedMs > 0)) return;
    this.clusterTime += elapsedMs;
    const clock = new Uint8Array(8);
    putFixed64(clock, 0, this.clusterTime);
    sink.put(CLOCK_KEY, clock);
    for (const s of [...this.sessions.values()]) {
      if (this.clusterTime - s.lastActive > this.limits.ttlMs) this.drop(s, sink);
    }
  }

  /**
   * Decides how a write of a session applies (see SessionVerdict), and records it: a new
   * write's result is kept (its KeptResult is filled by the caller when known), results
   * below the client's mark are dropped, the session's activity is refreshed.
   */
  decide(call: SessionCall, sink: SessionSink): SessionVerdict {
    const s = this.sessions.get(call.id);
    if (s === undefined) {
      return {
        kind: "refused",
        error: new KvError(
          "SESSION_EXPIRED",
          `not applied: client session ${call.id} is unknown or expired (idle longer than the session TTL of ${this.limits.ttlMs} ms, or evicted); open a new session`,
        ),
      };
    }
    s.lastActive = this.clusterTime;
    if (call.ackedBelow > s.ackedBelow) {
      for (const seq of s.results.keys()) {
        if (seq < call.ackedBelow) {
          s.results.delete(seq);
          sink.delete(resultKey(s.id, seq));
        }
      }
      s.ackedBelow = call.ackedBelow;
    }
    sink.put(sessionKey(s.id), encodeSession(s));
    const kept = s.results.get(call.seq);
    if (kept !== undefined) return { kind: "duplicate", kept };
    if (call.seq < s.ackedBelow) {
      return {
        kind: "refused",
        error: new KvError(
          "FAILED_PRECONDITION",
          `not applied: write ${call.seq} of client session ${call.id} was answered already (the client acknowledged every write below ${s.ackedBelow})`,
        ),
      };
    }
    if (s.results.size >= this.limits.maxResults) {
      return {
        kind: "refused",
        error: new KvError(
          "RESOURCE_EXHAUSTED",
          `not applied: client session ${call.id} holds ${s.results.size} unacknowledged writes (the limit); wait for answers before sending more`,
        ),
      };
    }
    const fresh: KeptResult = { cas: undefined };
    s.results.set(call.seq, fresh);
    return { kind: "apply", kept: fresh };
  }

  /** Stores a new write's result (`kept`, once known: a CAS's when it is decided). */
  keep(call: SessionCall, kept: KeptResult, sink: SessionSink): void {
    sink.put(resultKey(call.id, call.seq), encodeKept(kept));
  }

  /** Drops every session (a snapshot install replaces the table). */
  clear(): void {
    this.sessions.clear();
    this.clusterTime = 0;
  }

  /**
   * Restores the table from its stored form: the clock, each session record and each
   * kept result (the store's internal keys, in any order).
   */
  load(entries: Iterable<readonly [Uint8Array, Uint8Array]>): void {
    this.clear();
    const results: Array<[number, number, KeptResult]> = [];
    for (const [key, value] of entries) {
      if (Buffer.compare(key, CLOCK_KEY) === 0) {
        if (value.length !== 8) throw corrupt("the clock");
        this.clusterTime = getFixed64(value, 0);
      } else if (startsWith(key, SESSION_PREFIX)) {
        if (key.length !== SESSION_PREFIX.length + 8) throw corrupt("a session key");
        const id = getBigEndian64(key, SESSION_PREFIX.length);
        getVarint(value, 0, vr);
        const lastActive = vr.value;
        getVarint(value, vr.offset, vr);
        this.sessions.set(id, { id, lastActive, ackedBelow: vr.value, results: new Map() });
      } else if (startsWith(key, RESULT_PREFIX)) {
        if (key.length !== RESULT_PREFIX.length + 16) throw corrupt("a result key");
        const id = getBigEndian64(key, RESULT_PREFIX.length);
        const seq = getBigEndian64(key, RESULT_PREFIX.length + 8);
        results.push([id, seq, decodeKept(value)]);
      }
    }
    for (const [id, seq, kept] of results) this.sessions.get(id)?.results.set(seq, kept);
  }

  private drop(s: Session, sink: SessionSink): void {
    this.sessions.delete(s.id);
    sink.delete(sessionKey(s.id));
    for (const seq of s.results.keys()) sink.delete(resultKey(s.id, seq));
  }
}

function startsWith(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}
