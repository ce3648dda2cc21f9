/**
 * The primary's side of the leases (docs/etcd.md, "Leases"): the only member that counts
 * time (the Raft leader; the single node), on its monotonic clock (performance.now(),
 * never the wall clock: etcd 12291). It proposes a Tick about every TICK_INTERVAL_MS
 * while leases exist or keep-alives are pending, carrying the milliseconds measured since
 * the previous one, at most MAX_TICK_STEP_MS (a primary stalled longer, etcd 15247, loses
 * the rest: time advances by the cap per Tick, it never mass-revokes on recovery), and
 * the leases kept alive since.
 *
 * A new primary counts from when entries were last appended to its log (appended()): the
 * time without a leader counts, but never time a Tick in its log counted (each was
 * proposed before it was appended here, and a new leader applies its predecessors' Ticks
 * after it took over); uncapped, and its first Tick carries `graceMs` (one election
 * timeout): every lease still alive after that Tick has at least graceMs left, the time
 * keep-alives get to reach the new leader, once per renewal (lease-requests.ts). So a key
 * outlives its lease's last keep-alive by at most the time without a leader before the
 * grace plus the grace, however many leaders follow.
 *
 * Keep-alives at the primary are answered at once from its local view: the replicated
 * table (lease-table.ts) with the time counted locally and not yet applied.
 */
import type { LeaseTick } from "./lease-requests.js";
import type { Lease, LeaseTable } from "./lease-table.js";

/** A primary proposes a Tick about this often while leases exist. */
export const TICK_INTERVAL_MS = 500;
/** The most one Tick advances the lease clock. */
export const MAX_TICK_STEP_MS = 1000;

export interface LessorOptions {
  /** The monotonic clock, ms (default performance.now). */
  readonly now?: () => number;
  /** The least time a new primary's first Tick leaves a live lease (default 0: the single node). */
  readonly graceMs?: number;
  readonly intervalMs?: number;
  readonly maxStepMs?: number;
}

export class Lessor {
  private readonly now: () => number;
  /** A new primary's grace: one election timeout (0 on a single node). */
  readonly graceMs: number;
  /** Between Ticks (a follower's renewals carry it as slack: lease-requests.ts). */
  readonly intervalMs: number;
  private readonly maxStepMs: number;
  private primary = false;
  /** Time counted up to here (local clock). */
  private countedTo = 0;
  /** When (local clock) entries were last appended to this member's log (appended()). */
  private appendedAt: number | undefined;
  /** The next Tick is a new primary's first: it carries the grace, its step uncapped. */
  private graceOwed = false;
  /** The grace proposed: leases alive at T `aliveAfter` (not graced) last until `floorAt`. */
  private floor: { aliveAfter: number; floorAt: number } | undefined;
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

  /**
   * Entries were appended to this member's log: every Tick it holds was proposed before
   * now, so a primary counting from now never counts time a Tick in its log counted.
   */
  appended(): void {
    this.appendedAt = this.now();
  }

  /** This member is (true) or is not (false) the primary (called on every Raft tick). */
  setPrimary(primary: boolean): void {
    if (primary === this.primary) return;
    this.primary = primary;
    this.pending.clear();
    this.floor = undefined;
    this.graceOwed = false;
    if (!primary) return;
    const now = this.now();
    this.countedTo = Math.min(now, this.appendedAt ?? now);
    this.graceOwed = this.graceMs > 0;
    // The first Tick is due at once: the sooner the grace is replicated, the sooner the
    // leases that expired without a leader go.
    this.proposedAt = this.graceOwed ? now - this.intervalMs : now;
    this.expectedTime = this.table()?.time ?? 0;
  }

  /** The lease clock as the primary sees it now. */
  private timeNow(table: LeaseTable): number {
    const base = Math.max(table.time, this.expectedTime);
    const since = Math.max(0, this.now() - this.countedTo);
    return base + (this.graceOwed ? since : Math.min(this.maxStepMs, since));
  }

  /** When `l` expires in the primary's view: with the grace owed or proposed. */
  private expiryOf(l: Lease, table: LeaseTable): number {
    const base = Math.max(table.time, this.expectedTime);
    const floor = this.graceOwed
      ? { aliveAfter: base, floorAt: this.timeNow(table) + this.graceMs }
      : this.floor;
    if (floor === undefined || l.graced || l.expiresAt <= floor.aliveAfter) return l.expiresAt;
    return Math.max(l.expiresAt, floor.floorAt);
  }

  /**
   * The primary's answer to a keep-alive of `id`: its granted TTL (s) if it exists and has
   * not expired (the renewal joins the next Tick), else 0. REQUIRES: primary.
   */
  keepAlive(id: bigint): number {
    const table = this.table();
    const l = table?.get(id);
    if (table === undefined || l === undefined) return 0;
    if (!this.pending.has(id) && this.expiryOf(l, table) <= this.timeNow(table)) return 0;
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
    return this.expiryOf(l, table) - this.timeNow(table);
  }

  /**
   * True iff a lease expired (in the local view) since the last Tick proposed, which
   * therefore revokes nothing of it: the next Tick is then due at once, so that a lease
   * goes within a Raft tick of its expiry rather than up to an interval later.
   */
  private expiryDue(table: LeaseTable): boolean {
    const now = this.timeNow(table);
    for (const l of table.values()) {
      const at = this.expiryOf(l, table);
      if (at > this.expectedTime && at <= now) return true;
    }
    return false;
  }

  /**
   * The Tick to propose now, or undefined (not the primary, not yet time, or nothing to
   * tell). Counts the time it carries as proposed.
   */
  nextTick(): LeaseTick | undefined {
    const table = this.table();
    if (!this.primary || table === undefined) return undefined;
    const now = this.now();
    if (now - this.proposedAt < this.intervalMs && !this.expiryDue(table)) return undefined;
    if (table.size === 0 && this.pending.size === 0) {
      // Nothing expires: the time until the next grant need not be counted.
      if (now > this.countedTo) this.countedTo = now;
      this.expectedTime = table.time;
      this.graceOwed = false;
      return undefined;
    }
    const grace = this.graceOwed;
    const cap = grace ? Number.POSITIVE_INFINITY : this.maxStepMs;
    const elapsedMs = Math.floor(Math.min(cap, Math.max(0, now - this.countedTo)));
    const renewed = [...this.pending.keys()];
    this.pending.clear();
    if (now > this.countedTo) {
      // A capped step drops the rest of the stall; otherwise the fraction carries over.
      this.countedTo = elapsedMs >= cap ? now : this.countedTo + elapsedMs;
    }
    this.proposedAt = now;
    const before = Math.max(table.time, this.expectedTime);
    this.expectedTime = before + elapsedMs;
    if (grace) {
      this.graceOwed = false;
      this.floor = { aliveAfter: before, floorAt: this.expectedTime + this.graceMs };
      return { elapsedMs, renewed, graceMs: this.graceMs };
    }
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
