/**
 * The hand-written etcdserverpb codec of the cluster benchmarks (bench/cluster/etcd-codec.ts):
 * requests encode to the protobuf bytes etcd's generated code expects (field numbers and
 * wire types written out by hand here), responses decode from such bytes, unknown fields
 * are skipped, 64-bit IDs stay exact.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  decodeMemberAdd,
  decodeRange,
  decodeResponseHeader,
  decodeStatus,
  encodeMemberAdd,
  encodePut,
  encodeRange,
  encodeTxnPuts,
} from "../../bench/cluster/etcd-codec.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

test("PutRequest: key = 1, value = 2, both length-delimited", () => {
  // 0x0a = field 1, wire type 2; 0x12 = field 2, wire type 2.
  assert.equal(hex(encodePut(bytes("ab"), bytes("xyz"))), "0a026162120378797a");
});

test("RangeRequest: key = 1, range_end = 2, limit = 3 (varint), serializable = 7 (varint)", () => {
  assert.equal(hex(encodeRange(bytes("a"), undefined, 0, false)), "0a0161");
  assert.equal(
    hex(encodeRange(bytes("a"), bytes("b"), 500, true)),
    "0a01611201621 8f403 3801".replaceAll(" ", ""),
  );
});

test("TxnRequest: success = 2, each a RequestOp with request_put = 2", () => {
  const one = encodeTxnPuts([bytes("k")], [bytes("v")]);
  // TxnRequest.success (0x12) len 8 { RequestOp.request_put (0x12) len 6 { 0a 01 'k' 12 01 'v' } }
  assert.equal(hex(one), "120812060a016b120176");
  const two = encodeTxnPuts([bytes("k"), bytes("l")], [bytes("v"), bytes("w")]);
  assert.equal(hex(two), "120812060a016b120176120812060a016c120177");
});

test("MemberAddRequest: peerURLs = 1, repeated", () => {
  assert.equal(hex(encodeMemberAdd(["u"])), "0a0175");
});

function header(w: BinaryWriter, memberId: bigint, term: bigint): BinaryWriter {
  return w
    .tag(1, WireType.LengthDelimited)
    .fork()
    .tag(1, WireType.Varint)
    .uint64(7n)
    .tag(2, WireType.Varint)
    .uint64(memberId)
    .tag(3, WireType.Varint)
    .int64(42n)
    .tag(4, WireType.Varint)
    .uint64(term)
    .join();
}

test("RangeResponse: kvs (key = 1, value = 5) in order, more, count; other fields skipped", () => {
  const w = header(new BinaryWriter(), 1n, 2n);
  for (const [k, v] of [
    ["a", "1"],
    ["b", "2"],
  ]) {
    w.tag(2, WireType.LengthDelimited)
      .fork()
      .tag(1, WireType.LengthDelimited)
      .bytes(bytes(k!))
      .tag(2, WireType.Varint)
      .int64(5) // create_revision
      .tag(5, WireType.LengthDelimited)
      .bytes(bytes(v!))
      .join();
  }
  w.tag(3, WireType.Varint).bool(true).tag(4, WireType.Varint).int64(9);
  const r = decodeRange(w.finish());
  assert.deepEqual(
    r.kvs.map(([k, v]) => [Buffer.from(k).toString(), Buffer.from(v).toString()]),
    [
      ["a", "1"],
      ["b", "2"],
    ],
  );
  assert.equal(r.more, true);
  assert.equal(r.count, 9);
});

test("StatusResponse and the header: 64-bit member IDs exact, term, applied index", () => {
  const id = 13668033151171901709n; // above 2^53
  const w = header(new BinaryWriter(), id, 5n)
    .tag(2, WireType.LengthDelimited)
    .string("3.4.23")
    .tag(3, WireType.Varint)
    .int64(20480)
    .tag(4, WireType.Varint)
    .uint64(id)
    .tag(5, WireType.Varint)
    .uint64(11n)
    .tag(6, WireType.Varint)
    .uint64(5n)
    .tag(7, WireType.Varint)
    .uint64(10n)
    .tag(9, WireType.Varint)
    .int64(16384);
  const encoded = w.finish();
  const s = decodeStatus(encoded);
  assert.equal(s.header.memberId, id);
  assert.equal(s.header.clusterId, 7n);
  assert.equal(s.header.revision, 42n);
  assert.equal(s.leader, id);
  assert.equal(s.version, "3.4.23");
  assert.equal(s.raftIndex, 11n);
  assert.equal(s.raftTerm, 5n);
  assert.equal(s.raftAppliedIndex, 10n);
  assert.equal(decodeResponseHeader(encoded).raftTerm, 5n);
});

test("MemberAddResponse: the new member and the list", () => {
  const member = (w: BinaryWriter, field: number, id: bigint, name: string) =>
    w
      .tag(field, WireType.LengthDelimited)
      .fork()
      .tag(1, WireType.Varint)
      .uint64(id)
      .tag(2, WireType.LengthDelimited)
      .string(name)
      .tag(3, WireType.LengthDelimited)
      .string(`http://p/${name}`)
      .tag(4, WireType.LengthDelimited)
      .string(`http://c/${name}`)
      .tag(5, WireType.Varint)
      .bool(name === "")
      .join();
  const w = header(new BinaryWriter(), 1n, 1n);
  member(w, 2, 99n, "");
  member(w, 3, 1n, "n1");
  member(w, 3, 99n, "");
  const r = decodeMemberAdd(w.finish());
  assert.equal(r.member.id, 99n);
  assert.equal(r.member.isLearner, true);
  assert.deepEqual(r.member.peerUrls, ["http://p/"]);
  assert.deepEqual(
    r.members.map((m) => [m.id, m.name, m.clientUrls[0]]),
    [
      [1n, "n1", "http://c/n1"],
      [99n, "", "http://c/"],
    ],
  );
  assert.throws(() => decodeMemberAdd(header(new BinaryWriter(), 1n, 1n).finish()), /no member/);
});
