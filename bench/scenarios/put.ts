/** `put`: durable puts, one at a time, each awaited before the next; random key order. */
import { nowNs, summarize } from "../lib/stats.js";
import { shuffledKeys, valueSource } from "../lib/workload.js";
import { verifySample } from "./common.js";
import type { StoreScenario } from "./scenario.js";

export const put: StoreScenario = {
  kind: "store",
  name: "put",
  title: "durable puts (sync), one at a time, random key order",
  sync: true,
  defaultN: (quick) => (quick ? 1000 : 5000),
  async run(store, { n, valueSize, seed }) {
    const keys = shuffledKeys(n, seed);
    const value = valueSource(valueSize, seed);
    const latencies = new Float64Array(n);
    const opts = { sync: true };
    const start = nowNs();
    for (let i = 0; i < n; i++) {
      const t0 = nowNs();
      await store.put(keys[i]!, value(i), opts);
      latencies[i] = nowNs() - t0;
    }
    const seconds = (nowNs() - start) / 1e9;
    await verifySample(store, keys, value);
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
    };
  },
};
