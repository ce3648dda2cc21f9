/**
 * The Range responses the etcd KV service encodes by hand (src/etcd/range-response-codec.ts)
 * are byte for byte what protobuf-es's toBinary writes: random pages (empty keys and
 * values, zero and large revisions and leases, with and without header, more and count),
 * the edges that go to toBinary (negative and 64-bit int64s, unknown fields); and
 * toPbKeyValue's written-out message equals create()'s.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { etcdKvService } from "../../src/etcd/kv-service.js";
import { encodeRangeResponse } from "../../src/etcd/range-response-codec.js";
import { toPbKeyValue } from "../../src/mvcc/requests/key-value.js";
import {
  type RangeResponse,
  RangeResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { KeyValueSchema } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { randInt, rng, testSeed } from "../support/random.js";

const EDGES = [0n, 1n, 127n, 128n, 16_383n, 16_384n, 2n ** 32n, 2n ** 53n - 1n];

function randomResponse(r: () => number): RangeResponse {
  const pick = () => EDGES[randInt(r, EDGES.length)]!;
  const kvs = Array.from({ length: randInt(r, 40) }, (_, i) =>
    create(KeyValueSchema, {
      key: Buffer.alloc(randInt(r, 3) === 0 ? 0 : 1 + randInt(r, 200), i & 0xff),
      value: Buffer.alloc(randInt(r, 4) === 0 ? 0 : randInt(r, 20_000), 7),
      createRevision: pick(),
      modRevision: pick(),
      version: pick(),
      lease: pick(),
    }),
  );
  return create(RangeResponseSchema, {
    ...(randInt(r, 4) === 0
      ? {}
      : {
          header: {
            clusterId: 2n ** 64n - 1n - BigInt(randInt(r, 1000)),
            memberId: BigInt(randInt(r, 1 << 30)),
            revision: pick(),
            raftTerm: pick(),
          },
        }),
    kvs,
    more: randInt(r, 2) === 0,
    count: pick(),
  });
}

test("encodeRangeResponse is toBinary's bytes for random pages", () => {
  const seed = testSeed();
  const r = rng(seed);
  for (let i = 0; i < 1000; i++) {
    const resp = randomResponse(r);
    assert.deepEqual(
      Buffer.from(encodeRangeResponse(resp)),
      Buffer.from(toBinary(RangeResponseSchema, resp)),
      `seed ${seed}, case ${i}`,
    );
  }
});

test("values it does not cover go to toBinary: negative and 64-bit int64s, unknown fields", () => {
  const kv = (over: Partial<Record<"createRevision" | "lease", bigint>>) =>
    create(KeyValueSchema, { key: Buffer.from("k"), value: Buffer.from("v"), ...over });
  const cases: RangeResponse[] = [
    create(RangeResponseSchema, { kvs: [kv({ lease: -1n })], count: 1n }),
    create(RangeResponseSchema, { kvs: [kv({ lease: 2n ** 63n - 1n })] }),
    create(RangeResponseSchema, { kvs: [kv({ createRevision: 2n ** 53n })] }),
    create(RangeResponseSchema, { count: -5n }),
    {
      ...create(RangeResponseSchema, { kvs: [kv({})] }),
      $unknown: [{ no: 99, wireType: 0, data: new Uint8Array([5]) }],
    },
  ];
  for (const resp of cases) {
    assert.deepEqual(
      Buffer.from(encodeRangeResponse(resp)),
      Buffer.from(toBinary(RangeResponseSchema, resp)),
    );
  }
});

test("the KV service's Range encodes with it", () => {
  const resp = create(RangeResponseSchema, {
    kvs: [create(KeyValueSchema, { key: Buffer.from("a"), modRevision: 3n })],
    count: 1n,
  });
  assert.equal(etcdKvService.methods.Range.encode, encodeRangeResponse);
  assert.deepEqual(
    Buffer.from(etcdKvService.methods.Range.encode(resp)),
    Buffer.from(toBinary(RangeResponseSchema, resp)),
  );
});

test("toPbKeyValue's message equals create()'s", () => {
  const kv = {
    key: Buffer.from("key"),
    value: Buffer.from("value"),
    createRevision: 3,
    modRevision: 9,
    version: 4,
    lease: 0x7fff_ffff_ffff_ff00n,
  };
  for (const keysOnly of [false, true]) {
    assert.deepEqual(
      toPbKeyValue(kv, keysOnly),
      create(KeyValueSchema, {
        key: kv.key,
        value: keysOnly ? new Uint8Array(0) : kv.value,
        createRevision: 3n,
        modRevision: 9n,
        version: 4n,
        lease: kv.lease,
      }),
    );
  }
});
