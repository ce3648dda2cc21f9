/**
 * The hand-written lease and lock codec of the lease benchmarks (bench/cluster/
 * lease-codec.ts) against etcd's generated messages: requests decode with etcd's schemas to
 * what was meant, responses encoded by etcd's schemas decode to their fields, int64 lease
 * IDs stay exact.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  decodeLeaseAnswer,
  decodeLockKey,
  encodeLeaseGrant,
  encodeLeaseId,
  encodeLock,
  encodePutWithLease,
  encodeUnlock,
} from "../../bench/cluster/lease-codec.js";
import {
  LeaseGrantRequestSchema,
  LeaseGrantResponseSchema,
  LeaseKeepAliveRequestSchema,
  LeaseKeepAliveResponseSchema,
  LeaseRevokeRequestSchema,
  PutRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const BIG = 0x7fff_ffff_ffff_fff1n;

test("LeaseGrant, LeaseRevoke and LeaseKeepAlive requests decode with etcd's schemas", () => {
  assert.equal(fromBinary(LeaseGrantRequestSchema, encodeLeaseGrant(60)).TTL, 60n);
  assert.equal(fromBinary(LeaseGrantRequestSchema, encodeLeaseGrant(60)).ID, 0n);
  assert.equal(fromBinary(LeaseRevokeRequestSchema, encodeLeaseId(BIG)).ID, BIG);
  assert.equal(fromBinary(LeaseKeepAliveRequestSchema, encodeLeaseId(BIG)).ID, BIG);
});

test("a Put with a lease decodes with etcd's schema", () => {
  const p = fromBinary(PutRequestSchema, encodePutWithLease(bytes("k"), bytes("v"), BIG));
  assert.deepEqual([Buffer.from(p.key).toString(), Buffer.from(p.value).toString()], ["k", "v"]);
  assert.equal(p.lease, BIG);
});

test("LeaseGrant and LeaseKeepAlive responses decode: ID, TTL, error", () => {
  const grant = create(LeaseGrantResponseSchema, {
    header: { revision: 9n },
    ID: BIG,
    TTL: 60n,
    error: "",
  });
  assert.deepEqual(decodeLeaseAnswer(toBinary(LeaseGrantResponseSchema, grant)), {
    id: BIG,
    ttl: 60,
    error: "",
  });
  const refused = create(LeaseGrantResponseSchema, { error: "no" });
  assert.equal(decodeLeaseAnswer(toBinary(LeaseGrantResponseSchema, refused)).error, "no");
  const gone = create(LeaseKeepAliveResponseSchema, { header: { revision: 3n }, ID: 5n });
  assert.deepEqual(decodeLeaseAnswer(toBinary(LeaseKeepAliveResponseSchema, gone)), {
    id: 5n,
    ttl: 0,
    error: "",
  });
});

test("v3lock: LockRequest name = 1, lease = 2; LockResponse key = 2; UnlockRequest key = 1", () => {
  const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
  // 0x0a = field 1 length-delimited; 0x10 = field 2 varint.
  assert.equal(hex(encodeLock(bytes("ab"), 5n)), "0a0261621005");
  assert.equal(hex(encodeUnlock(bytes("ab"))), "0a026162");
  const response = new BinaryWriter()
    .tag(1, WireType.LengthDelimited)
    .bytes(Uint8Array.of(0x18, 0x07))
    .tag(2, WireType.LengthDelimited)
    .bytes(bytes("ab/5"))
    .finish();
  assert.equal(Buffer.from(decodeLockKey(response)).toString(), "ab/5");
  assert.throws(() => decodeLockKey(Uint8Array.of()), /without a key/);
});
