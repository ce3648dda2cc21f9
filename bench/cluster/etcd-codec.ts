/**
 * The few messages of etcd's v3 API (etcdserverpb, mvccpb; etcd 3.4's
 * api/etcdserverpb/rpc.proto and api/mvccpb/kv.proto) that the cluster benchmarks send:
 * KV.Put, KV.Range, KV.Txn (puts for loading; Kubernetes' update), Maintenance.Status and
 * Cluster.MemberAdd. Hand-written on @bufbuild/protobuf's wire reader and writer, so that
 * the benchmark needs no generated etcd code; fields not listed here are skipped when
 * decoding. Member and cluster IDs are full 64-bit values: bigint.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

/** gRPC method paths. */
export const ETCD_PUT = "/etcdserverpb.KV/Put";
export const ETCD_RANGE = "/etcdserverpb.KV/Range";
export const ETCD_TXN = "/etcdserverpb.KV/Txn";
export const ETCD_STATUS = "/etcdserverpb.Maintenance/Status";
export const ETCD_MEMBER_ADD = "/etcdserverpb.Cluster/MemberAdd";

export interface EtcdHeader {
  clusterId: bigint;
  memberId: bigint;
  revision: bigint;
  raftTerm: bigint;
}

export interface EtcdRange {
  kvs: [key: Uint8Array, value: Uint8Array][];
  /** Each kv's mod_revision, in the order of `kvs`. */
  modRevisions: number[];
  more: boolean;
  count: number;
  /** The header's revision. */
  revision: number;
}

export interface EtcdTxnUpdate {
  succeeded: boolean;
  /** The header's revision (the put's, when it succeeded). */
  revision: number;
  /** When it failed: the key's mod_revision read by the failure branch (0: absent). */
  current: number;
}

export interface EtcdStatus {
  header: EtcdHeader;
  version: string;
  leader: bigint;
  raftIndex: bigint;
  raftTerm: bigint;
  raftAppliedIndex: bigint;
}

export interface EtcdMember {
  id: bigint;
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

function finish(w: BinaryWriter): Buffer {
  const bytes = w.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** PutRequest { key = 1; value = 2 }. */
export function encodePut(key: Uint8Array, value: Uint8Array): Buffer {
  return finish(
    new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(key)
      .tag(2, WireType.LengthDelimited)
      .bytes(value),
  );
}

/** RangeRequest { key = 1; range_end = 2; limit = 3; revision = 4; serializable = 7 }. */
export function encodeRange(
  key: Uint8Array,
  rangeEnd: Uint8Array | undefined,
  limit: number,
  serializable: boolean,
  revision = 0,
): Buffer {
  const w = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(key);
  if (rangeEnd !== undefined) w.tag(2, WireType.LengthDelimited).bytes(rangeEnd);
  if (limit > 0) w.tag(3, WireType.Varint).int64(limit);
  if (revision > 0) w.tag(4, WireType.Varint).int64(revision);
  if (serializable) w.tag(7, WireType.Varint).bool(true);
  return finish(w);
}

/**
 * Kubernetes' update: TxnRequest { compare = 1: Compare { result = 1: EQUAL (0); target =
 * 2: MOD (2); key = 3; mod_revision = 6 }; success = 2: RequestOp { request_put = 2 };
 * failure = 3: RequestOp { request_range = 1: RangeRequest { key = 1 } } }.
 */
export function encodeTxnUpdate(key: Uint8Array, modRevision: number, value: Uint8Array): Buffer {
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).fork();
  w.tag(2, WireType.Varint).int32(2);
  w.tag(3, WireType.LengthDelimited).bytes(key);
  w.tag(6, WireType.Varint).int64(modRevision);
  w.join();
  w.tag(2, WireType.LengthDelimited).fork();
  w.tag(2, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).bytes(key).tag(2, WireType.LengthDelimited).bytes(value);
  w.join().join();
  w.tag(3, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).fork();
  w.tag(1, WireType.LengthDelimited).bytes(key);
  w.join().join();
  return finish(w);
}

/**
 * TxnResponse { header = 1; succeeded = 2; responses = 3: ResponseOp { response_range = 1 } }
 * of an update (encodeTxnUpdate).
 */
export function decodeTxnUpdate(bytes: Uint8Array): EtcdTxnUpdate {
  const r = new BinaryReader(bytes);
  const out: EtcdTxnUpdate = { succeeded: false, revision: 0, current: 0 };
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) out.revision = Number(decodeHeader(r.bytes()).revision);
    else if (no === 2) out.succeeded = r.bool();
    else if (no === 3) {
      const op = new BinaryReader(r.bytes());
      while (op.pos < op.len) {
        const [f, t] = op.tag();
        if (f === 1) out.current = decodeRange(op.bytes()).modRevisions[0] ?? 0;
        else op.skip(t, f);
      }
    } else r.skip(type, no);
  }
  return out;
}

/** TxnRequest { success = 2 (RequestOp { request_put = 2 })* }: puts applied atomically. */
export function encodeTxnPuts(keys: readonly Uint8Array[], values: readonly Uint8Array[]): Buffer {
  const w = new BinaryWriter();
  for (let i = 0; i < keys.length; i++) {
    w.tag(2, WireType.LengthDelimited).fork();
    w.tag(2, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).bytes(keys[i]!).tag(2, WireType.LengthDelimited);
    w.bytes(values[i]!);
    w.join().join();
  }
  return finish(w);
}

/** StatusRequest {}. */
export function encodeEmpty(): Buffer {
  return Buffer.alloc(0);
}

/** MemberAddRequest { peerURLs = 1; isLearner = 2 }. */
export function encodeMemberAdd(peerUrls: readonly string[]): Buffer {
  const w = new BinaryWriter();
  for (const u of peerUrls) w.tag(1, WireType.LengthDelimited).string(u);
  return finish(w);
}

function u64(r: BinaryReader): bigint {
  return BigInt(r.uint64());
}

function decodeHeader(bytes: Uint8Array): EtcdHeader {
  const r = new BinaryReader(bytes);
  const h: EtcdHeader = { clusterId: 0n, memberId: 0n, revision: 0n, raftTerm: 0n };
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) h.clusterId = u64(r);
    else if (no === 2) h.memberId = u64(r);
    else if (no === 3) h.revision = BigInt(r.int64());
    else if (no === 4) h.raftTerm = u64(r);
    else r.skip(type, no);
  }
  return h;
}

/** Any response's header (field 1 of every etcdserverpb response). */
export function decodeResponseHeader(bytes: Uint8Array): EtcdHeader {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) return decodeHeader(r.bytes());
    r.skip(type, no);
  }
  return decodeHeader(new Uint8Array(0));
}

/**
 * RangeResponse { header = 1; kvs = 2 (KeyValue { key = 1; mod_revision = 3; value = 5 });
 * more = 3; count = 4 }.
 */
export function decodeRange(bytes: Uint8Array): EtcdRange {
  const r = new BinaryReader(bytes);
  const out: EtcdRange = { kvs: [], modRevisions: [], more: false, count: 0, revision: 0 };
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) out.revision = Number(decodeHeader(r.bytes()).revision);
    else if (no === 2) {
      const kv = new BinaryReader(r.bytes());
      let key: Uint8Array = new Uint8Array(0);
      let value: Uint8Array = new Uint8Array(0);
      let mod = 0;
      while (kv.pos < kv.len) {
        const [f, t] = kv.tag();
        if (f === 1) key = kv.bytes();
        else if (f === 3) mod = Number(kv.int64());
        else if (f === 5) value = kv.bytes();
        else kv.skip(t, f);
      }
      out.kvs.push([key, value]);
      out.modRevisions.push(mod);
    } else if (no === 3) out.more = r.bool();
    else if (no === 4) out.count = Number(r.int64());
    else r.skip(type, no);
  }
  return out;
}

/**
 * StatusResponse { header = 1; version = 2; dbSize = 3; leader = 4; raftIndex = 5;
 * raftTerm = 6; raftAppliedIndex = 7; ... }.
 */
export function decodeStatus(bytes: Uint8Array): EtcdStatus {
  const r = new BinaryReader(bytes);
  const s: EtcdStatus = {
    header: decodeHeader(new Uint8Array(0)),
    version: "",
    leader: 0n,
    raftIndex: 0n,
    raftTerm: 0n,
    raftAppliedIndex: 0n,
  };
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) s.header = decodeHeader(r.bytes());
    else if (no === 2) s.version = r.string();
    else if (no === 4) s.leader = u64(r);
    else if (no === 5) s.raftIndex = u64(r);
    else if (no === 6) s.raftTerm = u64(r);
    else if (no === 7) s.raftAppliedIndex = u64(r);
    else r.skip(type, no);
  }
  return s;
}

function decodeMember(bytes: Uint8Array): EtcdMember {
  const r = new BinaryReader(bytes);
  const m: EtcdMember = { id: 0n, name: "", peerUrls: [], clientUrls: [], isLearner: false };
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 1) m.id = u64(r);
    else if (no === 2) m.name = r.string();
    else if (no === 3) m.peerUrls.push(r.string());
    else if (no === 4) m.clientUrls.push(r.string());
    else if (no === 5) m.isLearner = r.bool();
    else r.skip(type, no);
  }
  return m;
}

/** MemberAddResponse { header = 1; member = 2; members = 3 }. */
export function decodeMemberAdd(bytes: Uint8Array): { member: EtcdMember; members: EtcdMember[] } {
  const r = new BinaryReader(bytes);
  let member: EtcdMember | undefined;
  const members: EtcdMember[] = [];
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (no === 2) member = decodeMember(r.bytes());
    else if (no === 3) members.push(decodeMember(r.bytes()));
    else r.skip(type, no);
  }
  if (member === undefined) throw new Error("etcd MemberAdd: no member in the response");
  return { member, members };
}
