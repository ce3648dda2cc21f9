/**
 * `put_concurrent`: durable puts with CONCURRENCY in flight at all times (a pool of async
 * loops that each start the next put as soon as theirs resolves); random key order.
 * A latency sample is one put's submit-to-resolve time (queueing included).
 */
import { nowNs, summarize } from "../lib/stats.js";
import { shuffledKeys, valueSource } from "../lib/workload.js";
import { verifySample } from "./common.js";
import type { StoreScenario } from "./scenario.js";

export const CONCURRENCY = 64;

export const putConcurrent: StoreScenario = {
  kind: "store",
  name: "put_concurrent",
  title: `durable puts (sync), ${CONCURRENCY} in flight, random key order`,
  sync: true,
  defaultN: (quick) => (quick ? 4000 : 20000),
  async run(store, { n, valueSize, seed }) {
    const keys = shuffledKeys(n, seed);
    const value = valueSource(valueSize, seed);
    const latencies = new Float64Array(n);
    const opts = { sync: true };
    let next = 0;
    const loop = async (): Promise<void> => {
      while (next < n) {
        const i = next++;
        const t0 = nowNs();
        await store.put(keys[i]!, value(i), opts);
        latencies[i] = nowNs() - t0;
      }
    };
    const start = nowNs();
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, loop));
    const seconds = (nowNs() - start) / 1e9;
    await verifySample(store, keys, value);
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
      extra: { concurrency: CONCURRENCY },
    };
  },
};
