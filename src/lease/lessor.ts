/**
 * The primary's side of the leases (docs/etcd.md, "Leases"): the only member that counts
 * time (the Raft leader; the single node), on its monotonic clock (performance.now(),
 * never the wall clock: etcd 12291). It proposes a Tick about every TICK_INTERVAL_MS
 * while leases exist or keep-alives are pending, carrying the milliseconds measured since
 * the previous one, at most MAX_TICK_STEP_MS (a primary stalled longer, etcd 15247, loses
 * the rest: time advances by the cap per Tick, it never mass-revokes on recovery), and
 * the leases kept alive since. A new primary does not count its first `graceMs` (one
 * election timeout): the time keep-alives get to reach it after a leader change; the time
 * without a leader never counts.
 *
 * Keep-alives at the primary are answered at once from its local view: the replicated
 * table (lease-table.ts) with the time counted locally and not yet applied.
 */
import type { LeaseTick } from "./lease-requests.js";
import type { LeaseTable } from "./lease-table.js";

/** A primary proposes a Tick about this often while leases exist. */
export const TICK_INTERVAL_MS = 500;
/** The most one Tick advances the lease clock. */
export const MAX_TICK_STEP_MS = 1000;

export interface LessorOptions {
  /** The monotonic clock, ms (default performance.now). */
  readonly now?: () => number;
  /** Not counted after becoming primary (default 0: the single node). */
  readonly graceMs?: number;
  readonly intervalMs?: number;
  readonly maxStepMs?: number;
}

export class Lessor {
  private readonly now: () => number;
  /** Not counted after becoming primary: one election timeout (0 on a single node). */
  readonly graceMs: number;
  /** Between Ticks (a follower's renewals carry it as slack: lease-requests.ts). */
  readonly intervalMs: number;
  private readonly maxStepMs: number;
  private primary = false;
  /** Time counted up to here (local clock); may be ahead of now during the grace. */
  private countedTo = 0;
  /** When the last Tick was proposed (local clock). */
  private proposedAt = 0;
  /** T as it will be once the Tick last proposed is applied. */
  private expectedTime = 0;
  /** Keep-alives answered and not yet proposed: id -> local time answered. */
  private readonly pending = new Map<bigint, number>();

  constructor(
    private readonly table: () => LeaseTable | undefined,
    options: LessorOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.graceMs = options.graceMs ?? 0;
    this.intervalMs = options.intervalMs ?? TICK_INTERVAL_MS;
    this.maxStepMs = options.maxStepMs ?? MAX_TICK_STEP_MS;
  }

  get isPrimary(): boolean {
    return this.primary;
  }

  /** This member became (true) or stopped being (false) the primary. */
  setPrimary(primary: boolean): void {
    if (primary === this.primary) return;
    this.primary = primary;
    this.pending.clear();
    if (!primary) return;
    const now = this.now();
    this.countedTo = now + this.graceMs;
    this.proposedAt = now;
    this.expectedTime = this.table()?.time ?? 0;
  }

  /** The lease clock as the primary sees it now. */
  private timeNow(table: LeaseTable): number {
    const base = Math.max(table.time, this.expectedTime);
    return base + Math.min(this.maxStepMs, Math.max(0, this.now() - this.countedTo));
  }

  /**
   * The primary's answer to a keep-alive of `id`: its granted TTL (s) if it exists and has
   * not expired (the renewal joins the next Tick), else 0. REQUIRES: primary.
   */
  keepAlive(id: bigint): number {
    const table = this.table();
    const l = table?.get(id);
    if (table === undefined || l === undefined) return 0;
    if (!this.pending.has(id) && l.expiresAt <= this.timeNow(table)) return 0;
    this.pending.set(id, this.now());
    return l.ttl;
  }

  /**
   * The remaining milliseconds of `id` (undefined: no such lease): at the primary from its
   * local clock, elsewhere from the replicated table.
   */
  remainingMs(id: bigint): number | undefined {
    const table = this.table();
    const l = table?.get(id);
    if (table === undefined || l === undefined) return undefined;
    if (!this.primary) return l.expiresAt - table.time;
    const renewed = this.pending.get(id);
    if (renewed !== undefined) return l.ttl * 1000 - (this.now() - renewed);
    return l.expiresAt - this.timeNow(table);
  }

  /**
   * The Tick to propose now, or undefined (not the primary, not yet time, or nothing to
   * tell). Counts the time it carries as proposed.
   */
  nextTick(): LeaseTick | undefined {
    const table = this.table();
    if (!this.primary || table === undefined) return undefined;
    const now = this.now();
    if (now - this.proposedAt < this.intervalMs) return undefined;
    if (table.size === 0 && this.pending.size === 0) {
      // Nothing expires: the time until the next grant need not be counted.
      if (now > this.countedTo) this.countedTo = now;
      this.expectedTime = table.time;
      return undefined;
    }
    const elapsedMs = Math.floor(Math.min(this.maxStepMs, Math.max(0, now - this.countedTo)));
    const renewed = [...this.pending.keys()];
    this.pending.clear();
    if (now > this.countedTo) {
      // A capped step drops the rest of the stall; otherwise the fraction carries over.
      this.countedTo = elapsedMs >= this.maxStepMs ? now : this.countedTo + elapsedMs;
    }
    this.proposedAt = now;
    this.expectedTime = Math.max(table.time, this.expectedTime) + elapsedMs;
    if (elapsedMs === 0 && renewed.length === 0) return undefined;
    return { elapsedMs, renewed };
  }
}

/**
 * etcd's TTL of a remaining time: whole seconds, rounded down, as etcd's
 * int64(Remaining().Seconds()) (a lease granted 10 s shows 9 right after); never below 0.
 */
export function ttlSeconds(remainingMs: number): number {
  return Math.max(0, Math.floor((remainingMs - 1) / 1000));
}
