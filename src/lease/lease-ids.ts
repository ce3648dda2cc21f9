/**
 * Lease IDs a proposer chooses when the client gave 0, as etcd's reqIDGen: positive
 * int63, the low 16 bits of the member ID in bits 47-62, then a counter started from the
 * wall clock (ms, so that a restarted member does not reuse its IDs) and advanced by one
 * per ID. Two members whose IDs share their low 16 bits may collide: the grant is then
 * refused "lease already exists", as etcd's would be.
 */
const COUNTER_BITS = 47n;
const COUNTER_MASK = (1n << COUNTER_BITS) - 1n;

export class LeaseIdGenerator {
  private readonly prefix: bigint;
  private counter: bigint;

  constructor(memberId: number | bigint, nowMs: number = Date.now()) {
    this.prefix = (BigInt(memberId) & 0xffffn) << COUNTER_BITS;
    this.counter = (BigInt(Math.floor(nowMs)) << 7n) & COUNTER_MASK;
  }

  /** The next ID: in [1, 2^63). */
  next(): bigint {
    for (;;) {
      this.counter = (this.counter + 1n) & COUNTER_MASK;
      const id = this.prefix | this.counter;
      if (id !== 0n) return id;
    }
  }
}

/**
 * etcd's minimum lease TTL, seconds: ceil(1.5 x the election timeout), never below 1.
 * etcd with its defaults (1000 ms) answers 2; a single node here uses the same.
 */
export function minLeaseTtl(electionTimeoutMs: number): number {
  return Math.max(1, Math.ceil((1.5 * electionTimeoutMs) / 1000));
}

/** The TTL etcd's single node grants at least (its default election timeout, 1000 ms). */
export const SINGLE_NODE_MIN_TTL = minLeaseTtl(1000);
