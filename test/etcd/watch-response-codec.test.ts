/**
 * The events and event responses a Watch stream encodes by hand
 * (src/etcd/watch-response-codec.ts) are byte for byte what protobuf-es's toBinary writes
 * for the same message (events: puts and deletes, with and without prev_kv, empty keys
 * and values, 0, large and negative leases; responses: for values at the edges of their types (watch IDs 0, -1 and
 * 64-bit, 64-bit header ids), and when one HeaderEncoder is asked for changing headers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import type { EtcdHeaderIds } from "../../src/etcd/etcd-backend.js";
import { WatchEvent } from "../../src/etcd/watch-events.js";
import {
  encodeEvent,
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

test("an event encodes as toBinary encodes its message", () => {
  const seed = testSeed();
  const random = rng(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const leases = [0n, 1n, 0x7fff_ffff_ffff_ffffn, -1n, -(1n << 63n), 1n << 53n];
  const kv = () => ({
    key: Buffer.alloc(pick(3) === 0 ? 0 : pick(200), pick(256)),
    createRevision: pick(3) === 0 ? 0 : pick(2 ** 20) * (pick(2) === 0 ? 1 : 2 ** 30),
    modRevision: pick(4) === 0 ? 0 : pick(2 ** 40),
    version: pick(3) === 0 ? 0 : pick(300),
    value: Buffer.alloc(pick(3) === 0 ? 0 : pick(70_000), pick(256)),
    lease: leases[pick(leases.length)]!,
  });
  for (let i = 0; i < 500; i++) {
    const type = pick(2) === 0 ? "put" : "delete";
    const e = new WatchEvent({ type, kv: kv(), revision: 1 + pick(100) });
    if (pick(2) === 0) e.prev = kv();
    for (const prevKv of [false, true]) {
      const expected = toBinary(EventSchema, e.message(prevKv));
      assert.equal(
        Buffer.from(e.encoded(prevKv)).toString("hex"),
        Buffer.from(expected).toString("hex"),
        `seed ${seed}, event ${i}, prevKv ${prevKv}`,
      );
      const direct = encodeEvent(type, e.change.kv, prevKv ? e.prev : undefined);
      assert.equal(direct.length, expected.length);
    }
  }
});
