/**
 * The open loop of the cluster benchmarks' load processes (LoadSpec.ratePerSec; the lean
 * client in bench/cluster/load-client.ts, Python grpcio in bench/cluster/grpcio-load.py)
 * against a 1-member kv-engine cluster: the window holds exactly the calls due inside it
 * (each waited for, however late it ends), whatever the machine's speed; each call's
 * latency counts from when it was due, so a member paused for a while shows in every call
 * due meanwhile, not in one; and a window whose calls end late lasts until they did.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type BenchCluster, settledLeader } from "../../bench/cluster/cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import { grpcioMissing, LOAD_ERRORS, LOAD_RATE, runLoad } from "../../bench/cluster/load.js";
import { withBenchCluster } from "../support/bench-cluster.js";

const noGrpcio = grpcioMissing() ?? false;

async function common(c: BenchCluster, durationMs: number) {
  return {
    kind: c.kind,
    endpoints: [c.clientAddress(await settledLeader(c))],
    warmupMs: 100,
    durationMs,
    keySpace: 50,
    scanRows: 5,
    valueSize: 100,
    timeoutMs: 10_000,
  };
}

for (const client of ["lean", "grpcio"] as const) {
  test(
    `${client}: an open loop's window holds exactly the calls due in it`,
    { timeout: 60_000, skip: client === "grpcio" ? noGrpcio : false },
    () =>
      withBenchCluster(
        (dir) => KvCluster.start(dir, 1),
        async (c) => {
          // 2 processes at 100 calls/s each: calls due at i x 10 ms after go; the window
          // [100, 600) ms holds i = 10..59 of each, 100 in all.
          const row = await runLoad(
            await common(c, 500),
            { label: "", op: "put", procs: 2, inFlight: 8, client, ratePerSec: 200 },
            1,
          );
          assert.equal(row.values?.[LOAD_ERRORS], 0, row.description);
          assert.equal(row.ops, 100, row.description);
          assert.equal(row.latency?.samples, 100);
          assert.equal(row.values?.[LOAD_RATE], 200);
          assert.match(row.description ?? "", /open loop at 200 calls\/s \(at most 8 in flight\)/);
        },
      ),
  );

  test(
    `${client}: an open loop counts each call's latency from when it was due`,
    { timeout: 60_000, skip: client === "grpcio" ? noGrpcio : false },
    () =>
      withBenchCluster(
        (dir) => KvCluster.start(dir, 1),
        async (c) => {
          const member = c.names()[0]!;
          // The member is paused for 600 ms from 1,700 ms into a 2 s window, one call at a
          // time at most: at 100 calls/s, the calls due meanwhile wait for the one
          // outstanding, each slow from when it was due (counted from when it started, or
          // in a closed loop, one call would be slow); the window lasts until the last of
          // them ended, so fewer than the offered 100 calls per second show. runLoad
          // samples `cpuSeconds` when the window opens: the pause counts from there.
          let paused: Promise<void> | undefined;
          const atWindow = () => {
            paused ??= (async () => {
              await new Promise((r) => setTimeout(r, 1700));
              c.pause(member, true);
              await new Promise((r) => setTimeout(r, 600));
              c.pause(member, false);
            })();
            return 0;
          };
          const row = await runLoad(
            await common(c, 2000),
            { label: "", op: "put", procs: 1, inFlight: 1, client, ratePerSec: 100 },
            2,
            atWindow,
          );
          await paused;
          assert.equal(row.values?.[LOAD_ERRORS], 0, row.description);
          assert.equal(row.ops, 200, row.description);
          const max = row.latency?.maxNs ?? 0;
          assert.ok(max >= 300e6, `longest call ${(max / 1e6).toFixed(0)} ms`);
          // p90 of 200 calls is about the 20th slowest: the calls due in the pause's
          // first 200 ms waited 400 ms or more.
          const p90 = row.latency?.p90Ns ?? 0;
          assert.ok(p90 >= 100e6, `p90 ${(p90 / 1e6).toFixed(0)} ms`);
          assert.ok(row.seconds >= 2.25, `window ${row.seconds} s`);
          assert.ok(row.opsPerSec < 100, `${row.opsPerSec} calls/s`);
        },
      ),
  );
}
