/**
 * The multi-version requests a member replicates (command kind 6, command.ts; format in
 * docs/format/replicated-store.md, "Entries"): etcd's Put, DeleteRange, Txn and
 * Compaction, each as `tag:u8 ‖ the request's protobuf encoding` (tag 1 Put, 2
 * DeleteRange, 3 Txn, 4 Compaction); the lease requests (src/lease/): tag 5 LeaseGrant
 * and 6 LeaseRevoke (protobuf), 7 our Tick (`elapsedMs:fixed64 LE ‖ slackMs:fixed64 LE ‖
 * id:8 BE` per renewed lease); etcd's Maintenance.Alarm ACTIVATE/DEACTIVATE (tag 20: an
 * AlarmRequest; it sets or clears alarm keys, keys.ts, and changes no revision), and the
 * leader's corruption check (tag 21: a HashKVResponse, its HashKV at a revision, which
 * every member compares with its own once applied: nothing written). Every member runs the
 * request when it applies the entry (src/mvcc/requests/, src/lease/lease-requests.ts), so
 * each computes the same revisions, leases and alarms.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { WriteBatch } from "../batch/write-batch.js";
import { isKvError, KvError } from "../errors.js";
import {
  type LeaseRequest,
  type LeaseResponse,
  type LeaseTick,
  runLeaseRequest,
} from "../lease/lease-requests.js";
import type { LeaseTable } from "../lease/lease-table.js";
import { compact, deleteRange, isRequestError, put, txn } from "../mvcc/requests/index.js";
import type { Mvcc } from "../mvcc/types.js";
import {
  type AlarmRequest,
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  type AlarmResponse,
  AlarmResponseSchema,
  AlarmType,
  type CompactionRequest,
  CompactionRequestSchema,
  type CompactionResponse,
  type DeleteRangeRequest,
  DeleteRangeRequestSchema,
  type DeleteRangeResponse,
  type HashKVResponse,
  HashKVResponseSchema,
  LeaseGrantRequestSchema,
  LeaseRevokeRequestSchema,
  type PutRequest,
  PutRequestSchema,
  type PutResponse,
  type TxnRequest,
  TxnRequestSchema,
  type TxnResponse,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { alarmKey } from "./keys.js";

const EMPTY = new Uint8Array(0);
/** The alarms a DEACTIVATE of NONE clears. */
const ALARM_TYPES = [AlarmType.NOSPACE, AlarmType.CORRUPT];

export type MvccRequest =
  | { readonly kind: "put"; readonly request: PutRequest }
  | { readonly kind: "deleteRange"; readonly request: DeleteRangeRequest }
  | { readonly kind: "txn"; readonly request: TxnRequest }
  | { readonly kind: "compact"; readonly request: CompactionRequest }
  | LeaseRequest
  | { readonly kind: "alarm"; readonly request: AlarmRequest }
  | { readonly kind: "hashCheck"; readonly request: HashKVResponse };

const TAG_PUT = 1;
const TAG_DELETE_RANGE = 2;
const TAG_TXN = 3;
const TAG_COMPACT = 4;
const TAG_LEASE_GRANT = 5;
const TAG_LEASE_REVOKE = 6;
const TAG_LEASE_TICK = 7;

function encodeTick(t: LeaseTick): Uint8Array {
  const out = Buffer.alloc(1 + 16 + 8 * t.renewed.length);
  out[0] = TAG_LEASE_TICK;
  out.writeBigUInt64LE(BigInt(t.elapsedMs), 1);
  out.writeBigUInt64LE(BigInt(t.slackMs ?? 0), 9);
  for (const [i, id] of t.renewed.entries())
    out.writeBigUInt64BE(BigInt.asUintN(64, id), 17 + 8 * i);
  return out;
}

function decodeTick(rest: Uint8Array): LeaseTick {
  if (rest.length < 16 || rest.length % 8 !== 0) throw new RangeError("malformed tick");
  const b = Buffer.from(rest.buffer, rest.byteOffset, rest.length);
  const elapsed = b.readBigUInt64LE(0);
  const slack = b.readBigUInt64LE(8);
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  if (elapsed > max || slack > max) throw new RangeError("malformed tick");
  const renewed: bigint[] = [];
  for (let at = 16; at < b.length; at += 8) renewed.push(BigInt.asIntN(64, b.readBigUInt64BE(at)));
  return { elapsedMs: Number(elapsed), renewed, slackMs: Number(slack) };
}
const TAG_ALARM = 20;
const TAG_HASH_CHECK = 21;

function tagged(tag: number, body: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(1 + body.length);
  out[0] = tag;
  out.set(body, 1);
  return out;
}

export function encodeMvccRequest(r: MvccRequest): Uint8Array {
  switch (r.kind) {
    case "put":
      return tagged(TAG_PUT, toBinary(PutRequestSchema, r.request));
    case "deleteRange":
      return tagged(TAG_DELETE_RANGE, toBinary(DeleteRangeRequestSchema, r.request));
    case "txn":
      return tagged(TAG_TXN, toBinary(TxnRequestSchema, r.request));
    case "compact":
      return tagged(TAG_COMPACT, toBinary(CompactionRequestSchema, r.request));
    case "leaseGrant":
      return tagged(TAG_LEASE_GRANT, toBinary(LeaseGrantRequestSchema, r.request));
    case "leaseRevoke":
      return tagged(TAG_LEASE_REVOKE, toBinary(LeaseRevokeRequestSchema, r.request));
    case "leaseTick":
      return encodeTick(r.request);
    case "alarm":
      return tagged(TAG_ALARM, toBinary(AlarmRequestSchema, r.request));
    case "hashCheck":
      return tagged(TAG_HASH_CHECK, toBinary(HashKVResponseSchema, r.request));
  }
}

/** Decodes a request; throws KvError CORRUPTION for bytes that do not decode. */
export function decodeMvccRequest(body: Uint8Array): MvccRequest {
  const rest = body.subarray(1);
  try {
    switch (body[0]) {
      case TAG_PUT:
        return { kind: "put", request: fromBinary(PutRequestSchema, rest) };
      case TAG_DELETE_RANGE:
        return { kind: "deleteRange", request: fromBinary(DeleteRangeRequestSchema, rest) };
      case TAG_TXN:
        return { kind: "txn", request: fromBinary(TxnRequestSchema, rest) };
      case TAG_COMPACT:
        return { kind: "compact", request: fromBinary(CompactionRequestSchema, rest) };
      case TAG_LEASE_GRANT:
        return { kind: "leaseGrant", request: fromBinary(LeaseGrantRequestSchema, rest) };
      case TAG_LEASE_REVOKE:
        return { kind: "leaseRevoke", request: fromBinary(LeaseRevokeRequestSchema, rest) };
      case TAG_LEASE_TICK:
        return { kind: "leaseTick", request: decodeTick(rest) };
      case TAG_ALARM:
        return { kind: "alarm", request: fromBinary(AlarmRequestSchema, rest) };
      case TAG_HASH_CHECK:
        return { kind: "hashCheck", request: fromBinary(HashKVResponseSchema, rest) };
    }
  } catch (err) {
    throw new KvError("CORRUPTION", "malformed replicated entry: a request that does not decode", {
      cause: err,
    });
  }
  throw new KvError(
    "CORRUPTION",
    `malformed replicated entry: unknown request tag ${String(body[0])}`,
  );
}

/** What a request's proposer is answered with. */
export interface MvccRequestResult {
  readonly response:
    | PutResponse
    | DeleteRangeResponse
    | TxnResponse
    | CompactionResponse
    | LeaseResponse
    | AlarmResponse
    | HashKVResponse;
  /** A compaction: resolves when its history is removed (what `physical` waits for). */
  readonly done?: Promise<void>;
}

/** True iff `err` is a request etcd refuses when it applies it (nothing changed). */
function isRefusal(err: unknown): boolean {
  return isRequestError(err) || isKvError(err, "COMPACTED") || isKvError(err, "FUTURE_REVISION");
}

/**
 * Runs `req` on `mvcc` and its lease table `leases` as every member runs it, with `fill`'s
 * operations (the applied index) written after it: a write request in one write
 * transaction, a compaction through the store followed by a write of `fill` alone, a
 * lease request as lease-requests.ts runs it (a Tick: possibly several write
 * transactions, `fill` in the last one's batch). A request etcd refuses changes nothing
 * but `fill`'s keys and is answered with its error. Resolves once the writes are submitted
 * (the next request may begin), with `ended` (they are visible) and the answer. Rejects
 * when the store fails (the member must stop).
 */
export async function runMvccRequest(
  mvcc: Mvcc,
  leases: LeaseTable,
  req: MvccRequest,
  fill: (b: WriteBatch) => void,
): Promise<{ ended: Promise<void>; result?: MvccRequestResult; error?: unknown }> {
  if (req.kind === "leaseGrant" || req.kind === "leaseRevoke" || req.kind === "leaseTick") {
    const run = await runLeaseRequest(mvcc, leases, req, fill);
    if (run.response === undefined) return { ended: run.ended, error: run.error };
    return { ended: run.ended, result: { response: run.response } };
  }
  if (req.kind === "hashCheck") {
    return { ended: mvcc.write().end(fill), result: { response: req.request } };
  }
  if (req.kind === "alarm") {
    const a = req.request;
    const ended = mvcc.write().end((b) => {
      if (a.action === AlarmRequest_AlarmAction.ACTIVATE && a.alarm !== AlarmType.NONE) {
        b.put(alarmKey(a.memberID, a.alarm), EMPTY);
      } else if (a.action === AlarmRequest_AlarmAction.DEACTIVATE) {
        for (const t of a.alarm === AlarmType.NONE ? ALARM_TYPES : [a.alarm])
          b.delete(alarmKey(a.memberID, t));
      }
      fill(b);
    });
    return { ended, result: { response: create(AlarmResponseSchema, {}) } };
  }
  if (req.kind === "compact") {
    try {
      const result = compact(mvcc, req.request);
      return { ended: mvcc.write().end(fill), result };
    } catch (err) {
      if (!isRefusal(err)) throw err;
      return { ended: mvcc.write().end(fill), error: err };
    }
  }
  const w = mvcc.write();
  let response: MvccRequestResult["response"] | undefined;
  let error: unknown;
  try {
    if (req.kind === "put") response = await put(w, req.request, leases);
    else if (req.kind === "deleteRange") response = await deleteRange(w, req.request, leases);
    else response = await txn(w, req.request, leases);
  } catch (err) {
    if (!isRefusal(err)) throw err;
    error = err;
  }
  const ended = w.end(fill);
  return response === undefined ? { ended, error } : { ended, result: { response } };
}
