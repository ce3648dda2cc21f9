/**
 * The replicated lease state (docs/etcd.md, "Leases"): identical on every member because
 * it changes only when a member applies a lease request (lease-apply.ts). It holds the
 * lease clock T (ms; advanced only by Tick requests, which the primary proposes from its
 * monotonic clock) and per lease its granted TTL and expiry in T. The keys attached to
 * each lease are an in-memory index, rebuilt at load from the latest records: a hint (a
 * kv.v1 write on a cluster bypasses it), so a revoke deletes only the keys whose latest
 * record still names the lease.
 */
import type { KvStore } from "../db/kv-store.js";
import type { LatestScan } from "../mvcc/latest-scan.js";
import type { LeaseLookup } from "../mvcc/requests/leases.js";
import type { KeyValue } from "../mvcc/types.js";
import {
  decodeLeaseRecord,
  decodeLeaseTime,
  LEASE_PREFIX,
  LEASE_PREFIX_END,
  LEASE_TIME_KEY,
  type LeaseRecord,
} from "./lease-records.js";

/** One granted lease. */
export interface Lease {
  readonly id: bigint;
  /** The granted TTL, seconds. */
  readonly ttl: number;
  /** When it expires, in T (ms). */
  expiresAt: number;
  /** The keys attached (latin1 strings of the key bytes): a hint, see the module comment. */
  readonly keys: Set<string>;
}

/** What loading needs of the store: the KvStore and a scan of the latest versions. */
export interface LeaseSource {
  readonly store: KvStore;
  latestScan(): LatestScan;
}

const SCAN_ROWS = 512;

function keyString(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.length).toString("latin1");
}

export class LeaseTable implements LeaseLookup {
  /** The lease clock, ms. */
  time = 0;
  private readonly leases = new Map<bigint, Lease>();

  /**
   * The table `source` holds: its records and T, and the attached keys from the latest
   * versions naming a lease (not scanned when no lease exists). Throws CORRUPTION.
   */
  static async load(source: LeaseSource): Promise<LeaseTable> {
    const t = new LeaseTable();
    t.time = decodeLeaseTime(await source.store.get(LEASE_TIME_KEY));
    const rows = await source.store.iterator({ gte: LEASE_PREFIX, lt: LEASE_PREFIX_END }).all();
    for (const [k, v] of rows) t.add(decodeLeaseRecord(k, v));
    if (t.leases.size === 0) return t;
    const scan = source.latestScan();
    try {
      for (;;) {
        const kvs: KeyValue[] = await scan.nextBatch(SCAN_ROWS);
        for (const kv of kvs) if (kv.lease !== 0n) t.attach(kv.lease, kv.key);
        if (kvs.length < SCAN_ROWS) break;
      }
    } finally {
      scan.close();
    }
    return t;
  }

  /** Takes `other`'s state (a reload after the store recovered from a failed write). */
  assign(other: LeaseTable): void {
    this.time = other.time;
    this.leases.clear();
    for (const l of other.all()) this.leases.set(l.id, l);
  }

  get size(): number {
    return this.leases.size;
  }

  /** The lease `id`, expired or not, or undefined. */
  get(id: bigint): Lease | undefined {
    return this.leases.get(id);
  }

  /** True iff lease `id` is granted and not expired (expiresAt > T). */
  exists(id: bigint): boolean {
    const l = this.leases.get(id);
    return l !== undefined && l.expiresAt > this.time;
  }

  /** Every lease, in id order. */
  all(): Lease[] {
    return [...this.leases.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The leases with expiresAt <= T, in (expiresAt, id) order. */
  expired(): Lease[] {
    const out: Lease[] = [];
    for (const l of this.leases.values()) if (l.expiresAt <= this.time) out.push(l);
    return out.sort((a, b) =>
      a.expiresAt !== b.expiresAt ? a.expiresAt - b.expiresAt : a.id < b.id ? -1 : 1,
    );
  }

  /** Adds (or replaces) a lease from its record; keeps the keys of one replaced. */
  add(r: LeaseRecord): Lease {
    const l: Lease = {
      id: r.id,
      ttl: r.ttl,
      expiresAt: r.expiresAt,
      keys: this.leases.get(r.id)?.keys ?? new Set(),
    };
    this.leases.set(r.id, l);
    return l;
  }

  remove(id: bigint): void {
    this.leases.delete(id);
  }

  /** LeaseLookup: `key`'s latest version names lease `id` (ignored when no such lease). */
  attach(id: bigint, key: Uint8Array): void {
    this.leases.get(id)?.keys.add(keyString(key));
  }

  /** LeaseLookup: `key`'s latest version no longer names lease `id`. */
  detach(id: bigint, key: Uint8Array): void {
    this.leases.get(id)?.keys.delete(keyString(key));
  }

  /** The keys attached to `id` per the index, in key order. */
  keysOf(id: bigint): Uint8Array[] {
    const l = this.leases.get(id);
    if (l === undefined) return [];
    return [...l.keys]
      .map((s) => Buffer.from(s, "latin1"))
      .sort((a, b) => Buffer.compare(a, b))
      .map((b) => new Uint8Array(b.buffer, b.byteOffset, b.length));
  }
}
