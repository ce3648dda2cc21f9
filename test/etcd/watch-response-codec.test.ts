/**
 * The event responses a Watch stream encodes from already encoded events
 * (src/etcd/watch-response-codec.ts) are byte for byte what protobuf-es's toBinary writes
 * for the same response, for values at the edges of their types (watch IDs 0, -1 and
 * 64-bit, 64-bit header ids, events with and without prev_kv), and when one HeaderEncoder
 * is asked for changing headers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import type { EtcdHeaderIds } from "../../src/etcd/etcd-backend.js";
import {
  encodeEventsResponse,
  eventFieldBytes,
  eventsResponseBaseBytes,
  HeaderEncoder,
} from "../../src/etcd/watch-response-codec.js";
import { WatchResponseSchema } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  type Event,
  Event_EventType,
  EventSchema,
} from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { rng, testSeed } from "../support/random.js";

function event(i: number, withPrev: boolean): Event {
  const kv = {
    key: Buffer.from(`key_${i}`),
    value: Buffer.alloc(i % 300, i & 0xff),
    createRevision: BigInt(i),
    modRevision: BigInt(i + 1),
    version: BigInt(i % 5),
    lease: i % 3 === 0 ? 0n : 0x7fff_ffff_ffff_ff00n + BigInt(i % 7),
  };
  return create(EventSchema, {
    type: i % 2 === 0 ? Event_EventType.PUT : Event_EventType.DELETE,
    kv,
    ...(withPrev ? { prevKv: { ...kv, modRevision: BigInt(i) } } : {}),
  });
}

/** Encodes the response both ways and compares, and checks the size helpers agree. */
function same(
  headers: HeaderEncoder,
  ids: EtcdHeaderIds,
  revision: number,
  watchId: bigint,
  events: Event[],
  fragment: boolean,
): void {
  const expected = toBinary(
    WatchResponseSchema,
    create(WatchResponseSchema, {
      header: { ...ids, revision: BigInt(revision) },
      watchId,
      events,
      fragment,
    }),
  );
  const header = headers.encode(ids, revision);
  const encoded = events.map((e) => toBinary(EventSchema, e));
  const got = encodeEventsResponse(header, watchId, encoded, fragment);
  assert.equal(Buffer.from(got).toString("hex"), Buffer.from(expected).toString("hex"));
  let size = eventsResponseBaseBytes(header, watchId, fragment);
  for (const e of encoded) size += eventFieldBytes(e);
  assert.equal(size, expected.length);
}

test("an event response encodes as toBinary does, at the edges of each field", () => {
  const h = new HeaderEncoder();
  const ids = { clusterId: 9n, memberId: 8n, raftTerm: 128n };
  same(h, ids, 0, 0n, [], false);
  same(h, ids, 127, 0n, [event(1, false)], false);
  same(h, ids, 128, 7n, [event(1, false), event(2, true), event(300, true)], true);
  same(h, ids, 2 ** 40, -1n, [event(4, true)], false);
  same(h, ids, 5, (1n << 62n) + 5n, [event(5, false)], true);
  same(h, ids, 5, BigInt(Number.MAX_SAFE_INTEGER) + 1n, [event(6, false)], false);
  same(h, { clusterId: (1n << 64n) - 1n, memberId: 1n << 63n, raftTerm: 0n }, 1, 1n, [], false);
  same(h, { clusterId: 0n, memberId: 0n, raftTerm: 0n }, 0, 1n, [event(7, false)], false);
});

test("random responses with changing headers encode as toBinary does", () => {
  const seed = testSeed();
  const random = rng(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const events = Array.from({ length: 40 }, (_, i) => event(i * 37, i % 4 === 0));
  const h = new HeaderEncoder();
  for (let i = 0; i < 2_000; i++) {
    const ids = {
      clusterId: BigInt(pick(3)) << 60n,
      memberId: BigInt(pick(3)),
      raftTerm: BigInt(pick(2)),
    };
    const n = pick(5);
    same(
      h,
      ids,
      pick(5) * 1000,
      BigInt(pick(5) - 1),
      Array.from({ length: n }, () => events[pick(events.length)]!),
      pick(4) === 0,
    );
  }
});
