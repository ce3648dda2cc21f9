/**
 * The Watch benchmarks' pieces (bench/cluster/watch-*.ts): the hand codec reads and writes
 * what etcd's generated messages hold (unknown fields skipped, watch ID -1, each event's
 * value in order, the last event's revision); a value's stamp gives its send time only
 * when measured; a round fails when a watcher stalled, missed or repeated an event; and
 * watcher processes with the writer against a 1-member kv-engine cluster (and etcd when
 * installed): every watcher gets every put once, each measured event a latency, and a
 * watcher from a past revision the whole history.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type BenchCluster, settledLeader } from "../../bench/cluster/cluster.js";
import { EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import type { WatchClientResult, WatchClientSpec } from "../../bench/cluster/watch-client.js";
import { decodeWatchResponse, encodeWatchCreate } from "../../bench/cluster/watch-codec.js";
import { mergeRound, WatcherGroup, writePuts } from "../../bench/cluster/watch-load.js";
import { measuredSentNs, STAMP_BYTES, stampValue } from "../../bench/cluster/watch-stamp.js";
import { formatKey } from "../../bench/lib/workload.js";
import {
  WatchRequestSchema,
  WatchResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { Event_EventType } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { withBenchCluster } from "../support/bench-cluster.js";

const bytes = (s: string) => new TextEncoder().encode(s);

test("a create request is etcd's WatchCreateRequest: key, range_end, start_revision when > 0", () => {
  const from = fromBinary(WatchRequestSchema, encodeWatchCreate(bytes("a"), bytes("b"), 77));
  assert.equal(from.requestUnion.case, "createRequest");
  const c = from.requestUnion.case === "createRequest" ? from.requestUnion.value : undefined;
  assert.deepEqual([...(c?.key ?? [])], [...bytes("a")]);
  assert.deepEqual([...(c?.rangeEnd ?? [])], [...bytes("b")]);
  assert.equal(c?.startRevision, 77n);
  assert.equal(c?.watchId, 0n);
  const now = fromBinary(WatchRequestSchema, encodeWatchCreate(bytes("a"), bytes("b"), 0));
  assert.equal(
    now.requestUnion.case === "createRequest" && now.requestUnion.value.startRevision,
    0n,
  );
});

test("a response: its events counted, each value in order, the last mod_revision, the header skipped", () => {
  const kv = (key: string, rev: number, value: string) => ({
    key: bytes(key),
    createRevision: BigInt(rev),
    modRevision: BigInt(rev),
    version: 1n,
    value: bytes(value),
  });
  const message = toBinary(
    WatchResponseSchema,
    create(WatchResponseSchema, {
      header: { clusterId: 2n ** 63n + 5n, memberId: 9n, revision: 300n, raftTerm: 2n },
      watchId: 3n,
      fragment: true,
      events: [
        { type: Event_EventType.PUT, kv: kv("k1", 299, "one"), prevKv: kv("k1", 12, "old") },
        { type: Event_EventType.DELETE, kv: { key: bytes("k2"), modRevision: 300n } },
        { type: Event_EventType.PUT, kv: kv("k3", 300, "three") },
      ],
    }),
  );
  const values: string[] = [];
  const r = decodeWatchResponse(message, (v) => values.push(new TextDecoder().decode(v)));
  assert.deepEqual(r, {
    watchId: 3,
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: "",
    events: 3,
    lastModRevision: 300,
  });
  // The delete has no value; prev_kv's value is not an event's.
  assert.deepEqual(values, ["one", "three"]);
  assert.throws(
    () => decodeWatchResponse(message.subarray(0, message.length - 1)),
    /watch response/,
  );
});

test("a refused create: created, canceled, watch ID -1, the reason; a compaction's revision", () => {
  const refused = decodeWatchResponse(
    toBinary(
      WatchResponseSchema,
      create(WatchResponseSchema, {
        watchId: -1n,
        created: true,
        canceled: true,
        cancelReason: "mvcc: watcher range is empty",
      }),
    ),
  );
  assert.equal(refused.watchId, -1);
  assert.ok(refused.created && refused.canceled);
  assert.equal(refused.cancelReason, "mvcc: watcher range is empty");
  const compacted = decodeWatchResponse(
    toBinary(
      WatchResponseSchema,
      create(WatchResponseSchema, { watchId: 7n, canceled: true, compactRevision: 41n }),
    ),
  );
  assert.equal(compacted.watchId, 7);
  assert.equal(compacted.compactRevision, 41);
  assert.equal(compacted.events, 0);
});

test("a value's stamp: the send time of a measured put; nothing for a warm-up one", () => {
  const value = new Uint8Array(100).fill(7);
  const stamped = stampValue(value, 123_456_789.5, true);
  assert.equal(stamped.length, 100);
  assert.equal(measuredSentNs(stamped), 123_456_789.5);
  assert.deepEqual([...stamped.subarray(STAMP_BYTES)], [...value.subarray(STAMP_BYTES)]);
  assert.equal(value[0], 7, "the workload's value is not written to");
  assert.equal(measuredSentNs(stampValue(value, 5, false)), undefined);
  assert.equal(stampValue(new Uint8Array(2), 5, true).length, STAMP_BYTES);
  assert.equal(measuredSentNs(new Uint8Array(4)), undefined);
});

function result(over: Partial<WatchClientResult>): WatchClientResult {
  return {
    complete: true,
    events: 20,
    minEvents: 10,
    maxEvents: 10,
    minRevision: 30,
    responses: 4,
    goNs: 100,
    firstEventNs: 150,
    lastEventNs: 400,
    latenciesNs: [1, 2],
    clientCpuSeconds: 0.5,
    ...over,
  };
}

test("a round adds up its processes; a stalled, short or repeated watcher fails it", () => {
  const round = mergeRound(
    [result({}), result({ goNs: 90, lastEventNs: 500, latenciesNs: [3] })],
    30,
    10,
  );
  assert.equal(round.events, 40);
  assert.equal(round.responses, 8);
  assert.equal(round.goNs, 90);
  assert.equal(round.lastEventNs, 500);
  assert.deepEqual([...round.latenciesNs], [1, 2, 3]);
  assert.equal(round.clientCpuSeconds, 1);
  assert.throws(
    () =>
      mergeRound([result({}), result({ complete: false, minRevision: 20, minEvents: 4 })], 30, 10),
    /watchers stalled: 1 of 2 processes .* below revision 30 \(lowest at 20; fewest events 4 of 10\)/,
  );
  assert.throws(() => mergeRound([result({ minEvents: 9 })], 30, 10), /received 9 events, 10/);
  assert.throws(() => mergeRound([result({ maxEvents: 11 })], 30, 10), /received 11 events, 10/);
});

const encoder = new TextEncoder();

async function watchAndWrite(c: BenchCluster): Promise<void> {
  const leader = await settledLeader(c);
  const to = c.clientAddress(leader);
  const epoch = process.hrtime.bigint();
  const spec = (watchers: number, startRevision: number): WatchClientSpec => ({
    endpoint: to,
    watchers,
    perStream: 2,
    key: "key_",
    rangeEnd: "key`",
    startRevision,
    latency: true,
    epochNs: epoch.toString(),
  });
  const puts = {
    key: (i: number) => encoder.encode(formatKey(i)),
    value: () => new Uint8Array(20).fill(1),
    inFlight: 4,
    epoch,
    timeoutMs: 5000,
  };
  const first = await WatcherGroup.with([spec(3, 0), spec(2, 0)], async (group) => {
    await group.go();
    const done = await writePuts(to, {
      ...puts,
      first: 0,
      count: 20,
      ratePerSec: 400,
      measured: (i) => i >= 5,
    });
    assert.equal(done.latenciesNs.length, 20);
    const round = await group.round(done.revision, 20, 10_000);
    assert.equal(round.events, 5 * 20);
    assert.equal(round.latenciesNs.length, 5 * 15, "every watcher, the measured puts only");
    assert.ok(round.latenciesNs.every((l) => l > 0));
    assert.ok(round.lastEventNs >= done.firstSentNs);
    return done.revision - 19;
  });
  // From the past: one watcher gets the 20 puts and 10 more.
  const more = await writePuts(to, { ...puts, first: 20, count: 10 });
  await WatcherGroup.with([spec(1, first)], async (group) => {
    await group.go();
    assert.equal((await group.round(more.revision, 30, 10_000)).events, 30);
  });
}

test(
  "watcher processes and the writer against a 1-member kv-engine cluster",
  { timeout: 60_000 },
  () => withBenchCluster((dir) => KvCluster.start(dir, 1), watchAndWrite),
);

test(
  "watcher processes and the writer against a 1-member etcd",
  { timeout: 60_000, skip: etcdOnPath() === undefined ? "etcd is not on PATH" : false },
  () => withBenchCluster((dir) => EtcdCluster.start(dir, 1), watchAndWrite),
);
