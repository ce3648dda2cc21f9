/**
 * The simulated network between nodes (and between clients and nodes): every message is
 * delivered after a random delay, or dropped, or delivered twice; random delays reorder
 * messages. Links can be cut one way (A's messages no longer reach B) or both ways, to
 * build partitions, and healed. A message is lost if its link is cut when it is sent or
 * when it would arrive. Payloads are closures: senders encode what they send
 * (codec.ts) and the closure decodes on arrival, so no two nodes share a buffer.
 */
import type { Scheduler } from "./scheduler.js";

export interface LinkFaults {
  /** Probability that a message is lost. */
  dropRate: number;
  /** Probability that a delivered message is delivered a second time. */
  duplicateRate: number;
  /** Delay of an ordinary message: uniform in [minDelay, maxDelay] ms. */
  minDelay: number;
  maxDelay: number;
  /** Probability that a message is slow instead: delayed by up to `slowDelay` ms more. */
  slowRate: number;
  slowDelay: number;
}

export const CALM_LINKS: LinkFaults = {
  dropRate: 0,
  duplicateRate: 0,
  minDelay: 1,
  maxDelay: 3,
  slowRate: 0,
  slowDelay: 0,
};

export interface NetworkStats {
  sent: number;
  dropped: number;
  cut: number;
  duplicated: number;
}

export class SimNetwork {
  faults: LinkFaults = { ...CALM_LINKS };
  readonly stats: NetworkStats = { sent: 0, dropped: 0, cut: 0, duplicated: 0 };
  readonly #cuts = new Set<number>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly random: () => number,
  ) {}

  /** Sends a message from `from` to `to`; `arrive` runs on delivery (possibly twice). */
  send(from: number, to: number, arrive: () => void): void {
    this.stats.sent++;
    if (this.isCut(from, to)) {
      this.stats.cut++;
      return;
    }
    const f = this.faults;
    if (this.random() < f.dropRate) {
      this.stats.dropped++;
      return;
    }
    const copies = this.random() < f.duplicateRate ? 2 : 1;
    if (copies === 2) this.stats.duplicated++;
    for (let c = 0; c < copies; c++) {
      this.scheduler.after(this.delay(), () => {
        if (this.isCut(from, to)) {
          this.stats.cut++;
          return;
        }
        arrive();
      });
    }
  }

  /** A delay drawn from the current faults (for streams that share the links). */
  delay(): number {
    const f = this.faults;
    let d = f.minDelay + Math.floor(this.random() * (f.maxDelay - f.minDelay + 1));
    if (this.random() < f.slowRate) d += Math.floor(this.random() * (f.slowDelay + 1));
    return d;
  }

  /** True iff messages from `from` to `to` are lost. */
  isCut(from: number, to: number): boolean {
    return this.#cuts.size > 0 && this.#cuts.has(linkKey(from, to));
  }

  /** Messages from `from` to `to` are lost from now on (one way). */
  cut(from: number, to: number): void {
    this.#cuts.add(linkKey(from, to));
  }

  /** Cuts every link between different groups, both ways. */
  partition(groups: readonly (readonly number[])[]): void {
    for (const a of groups) {
      for (const b of groups) {
        if (a === b) continue;
        for (const x of a) for (const y of b) this.cut(x, y);
      }
    }
  }

  /** Restores every link. */
  heal(): void {
    this.#cuts.clear();
  }

  /** The cut links, as "from->to" strings (for failure reports). */
  describeCuts(): string {
    return [...this.#cuts]
      .sort((a, b) => a - b)
      .map((k) => `${Math.floor(k / LINK_BASE)}->${k % LINK_BASE}`)
      .join(" ");
  }
}

const LINK_BASE = 1 << 16;

function linkKey(from: number, to: number): number {
  return from * LINK_BASE + to;
}
