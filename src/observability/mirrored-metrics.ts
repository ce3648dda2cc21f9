/**
 * Prometheus metrics that mirror figures kept elsewhere (a store's or a cluster member's
 * stats), read when scraped.
 */
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * A counter that mirrors a running total kept elsewhere: on each scrape it adds the growth
 * since the last one (prom-client counters can only be incremented).
 */
export function mirroredCounter(
  registry: Registry,
  name: string,
  help: string,
  read: () => number,
): Counter {
  let last = 0;
  return new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > last) this.inc(now - last);
      last = now;
    },
  });
}

/** A gauge set on each scrape to `read()`, left as it was when that is undefined. */
export function mirroredGauge(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | undefined,
): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      const v = read();
      if (v !== undefined) this.set(v);
    },
  });
}
