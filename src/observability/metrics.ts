/**
 * Prometheus metrics of a store (and of the gRPC server in front of it), with prom-client.
 * Every metric is listed, with its type, labels and meaning, in docs/metrics.md; keep the
 * two in step.
 *
 * Sources: gauges and the engine's own counters are read from `store.stats()` when
 * Prometheus scrapes (nothing is added to the read or write path); durations and sizes of
 * flushes and compactions come from store events (`onEvent`), RPC counts and latencies
 * from the server's call observer (`onCall`).
 */
import { status } from "@grpc/grpc-js";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { KvBackend, StoreEvent, StoreStats } from "../db/kv-backend.js";
import { mirroredCounter, mirroredGauge } from "./mirrored-metrics.js";

/** What the metrics read from a gRPC server (KvServer satisfies it). */
export interface ServerStatsSource {
  stats(): {
    scans: { active: number; rowsSent: number; bytesSent: number };
    callsInFlight: number;
  };
}

const STALL_STATE_VALUE = { normal: 0, delayed: 1, stopped: 2 } as const;

/** Seconds buckets from 0.1 ms to ~50 s, for RPCs. */
const RPC_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5, 50];
/** Seconds buckets for flushes and compactions (milliseconds to minutes). */
const JOB_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.5, 2, 10, 60, 300];

export class KvMetrics {
  readonly registry = new Registry();
  private readonly flushSeconds: Histogram;
  private readonly flushBytes: Counter;
  private readonly compactionSeconds: Histogram<"level" | "kind">;
  private readonly compactionBytesRead: Counter;
  private readonly compactionBytesWritten: Counter;
  private readonly compactionFailures: Counter;
  private readonly walFailures: Counter<"op">;
  private readonly writeResumptions: Counter;
  private readonly stallState: Gauge<"cause">;
  private readonly rpcCalls: Counter<"method" | "code">;
  private readonly rpcSeconds: Histogram<"method">;
  /** The latest stats, read once per scrape by the first gauge collected. */
  private snapshot: StoreStats | undefined;
  /**
   * The store whose counters and gauges are reported; set it once the store is open (the
   * event listener must exist before, to be passed to `open`). Until then they read 0.
   */
  store: KvBackend | undefined;
  /** The gRPC server in front of the store, if any: its scan and in-flight figures. */
  server: ServerStatsSource | undefined;

  constructor() {
    const registry = this.registry;
    const stats = (): StoreStats | undefined => {
      this.snapshot ??= this.store?.stats();
      return this.snapshot;
    };
    const gauge = (name: string, help: string, read: (s: StoreStats) => number) =>
      mirroredGauge(registry, name, help, () => {
        const s = stats();
        return s === undefined ? undefined : read(s);
      });
    const counter = (name: string, help: string, read: (s: StoreStats) => number) =>
      mirroredCounter(registry, name, help, () => {
        const s = stats();
        return s === undefined ? 0 : read(s);
      });

    gauge("kv_memtable_bytes", "Approximate bytes of the active memtable.", (s) => s.memtableBytes);
    gauge("kv_memtable_entries", "Entries in the active memtable.", (s) => s.memtableEntries);
    gauge(
      "kv_immutable_memtables",
      "Memtables waiting for (or in) a flush.",
      (s) => s.immutableMemtables,
    );
    gauge(
      "kv_last_sequence",
      "Sequence number of the newest committed entry.",
      (s) => s.lastSequence,
    );
    new Gauge({
      name: "kv_level_files",
      help: "Table files per level.",
      labelNames: ["level"],
      registers: [registry],
      collect() {
        const values = stats()?.levelFiles ?? [];
        for (let level = 0; level < values.length; level++) {
          this.set({ level: String(level) }, values[level]!);
        }
      },
    });
    new Gauge({
      name: "kv_level_bytes",
      help: "Bytes of table files per level.",
      labelNames: ["level"],
      registers: [registry],
      collect() {
        const values = stats()?.levelBytes ?? [];
        for (let level = 0; level < values.length; level++) {
          this.set({ level: String(level) }, values[level]!);
        }
      },
    });
    counter(
      "kv_block_cache_hits_total",
      "Data block lookups served by the block cache.",
      (s) => s.blockCache.hits,
    );
    counter(
      "kv_block_cache_misses_total",
      "Data block lookups that read the file.",
      (s) => s.blockCache.misses,
    );
    counter(
      "kv_block_cache_rejected_total",
      "Blocks read on a point lookup that the full block cache declined to admit (read into scratch).",
      (s) => s.blockCache.rejected,
    );
    gauge("kv_block_cache_bytes", "Bytes charged to the block cache.", (s) => s.blockCache.bytes);
    gauge(
      "kv_block_cache_capacity_bytes",
      "Capacity of the block cache.",
      (s) => s.blockCache.capacity,
    );
    counter(
      "kv_bloom_filter_checked_total",
      "Table lookups that consulted a Bloom filter.",
      (s) => s.bloomFilter.checked,
    );
    counter(
      "kv_bloom_filter_useful_total",
      "Table lookups a Bloom filter answered 'absent' (no block read).",
      (s) => s.bloomFilter.useful,
    );
    counter("kv_flushes_total", "Memtables flushed to level-0 tables.", (s) => s.flushes);
    counter(
      "kv_compactions_total",
      "Compactions that rewrote files.",
      (s) => s.compaction.compactions,
    );
    counter(
      "kv_trivial_moves_total",
      "Files moved down a level without rewriting.",
      (s) => s.compaction.trivialMoves,
    );
    gauge(
      "kv_pending_compaction_bytes",
      "Estimated bytes compaction must rewrite to bring every level under its target.",
      (s) => s.pendingCompactionBytes,
    );
    gauge(
      "kv_write_amplification",
      "Bytes written to tables per byte flushed from memtables.",
      (s) => s.writeAmplification,
    );
    counter(
      "kv_write_stalls_total",
      "Times writers waited for a flush or a compaction.",
      (s) => s.writeStalls,
    );
    counter(
      "kv_write_slowdowns_total",
      "Write groups delayed 1 ms because level 0 reached its slowdown trigger.",
      (s) => s.writeSlowdowns,
    );
    counter(
      "kv_write_stall_seconds_total",
      "Seconds writers spent waiting in stalls and slowdowns.",
      (s) => s.stallMillis / 1000,
    );
    counter(
      "kv_wal_syncs_total",
      "fdatasyncs of the write-ahead log by the write path.",
      (s) => s.commit.syncs,
    );
    counter(
      "kv_commit_groups_total",
      "Commit groups (one log append each).",
      (s) => s.commit.groups,
    );
    counter("kv_commit_batches_total", "Write batches committed.", (s) => s.commit.batches);
    gauge(
      "kv_commit_max_group_size",
      "Largest commit group so far, in batches.",
      (s) => s.commit.maxGroupSize,
    );
    gauge("kv_open_iterators", "Iterators open now.", (s) => s.openIterators);
    gauge("kv_open_snapshots", "Snapshots not yet released.", (s) => s.openSnapshots);
    gauge(
      "kv_background_error",
      "1 while a background failure stops writes (see the logs), else 0.",
      (s) => (s.backgroundError === undefined ? 0 : 1),
    );

    this.flushSeconds = new Histogram({
      name: "kv_flush_duration_seconds",
      help: "Time to write a memtable to a level-0 table and install it.",
      buckets: JOB_BUCKETS,
      registers: [registry],
    });
    this.flushBytes = new Counter({
      name: "kv_flush_bytes_total",
      help: "Bytes of level-0 tables written by flushes.",
      registers: [registry],
    });
    this.compactionSeconds = new Histogram({
      name: "kv_compaction_duration_seconds",
      help: "Time of a compaction, from start to its version installed.",
      labelNames: ["level", "kind"],
      buckets: JOB_BUCKETS,
      registers: [registry],
    });
    this.compactionBytesRead = new Counter({
      name: "kv_compaction_bytes_read_total",
      help: "Bytes of input tables read by compactions.",
      registers: [registry],
    });
    this.compactionBytesWritten = new Counter({
      name: "kv_compaction_bytes_written_total",
      help: "Bytes of tables written by compactions.",
      registers: [registry],
    });
    this.compactionFailures = new Counter({
      name: "kv_compaction_failures_total",
      help: "Compactions that failed (each is retried with back-off).",
      registers: [registry],
    });
    this.walFailures = new Counter({
      name: "kv_wal_failures_total",
      help: "Failed appends, syncs and switches of the write-ahead log, by op.",
      labelNames: ["op"],
      registers: [registry],
    });
    for (const op of ["append", "sync", "switch"]) this.walFailures.inc({ op }, 0);
    this.writeResumptions = new Counter({
      name: "kv_write_resumptions_total",
      help: "Times writes resumed by themselves after the disk was full.",
      registers: [registry],
    });
    this.stallState = new Gauge({
      name: "kv_write_stall_state",
      help: "Write stall state: 0 normal, 1 delayed (level 0 slowdown), 2 stopped; cause label.",
      labelNames: ["cause"],
      registers: [registry],
    });
    this.stallState.set({ cause: "none" }, 0);
    this.rpcCalls = new Counter({
      name: "kv_rpc_calls_total",
      help: "Finished KvService calls by method and final gRPC status.",
      labelNames: ["method", "code"],
      registers: [registry],
    });
    this.rpcSeconds = new Histogram({
      name: "kv_rpc_duration_seconds",
      help: "KvService call duration by method (scans: until the stream ended).",
      labelNames: ["method"],
      buckets: RPC_BUCKETS,
      registers: [registry],
    });
    const server = () => this.server?.stats();
    new Gauge({
      name: "kv_rpc_calls_in_flight",
      help: "KvService calls whose handler has not settled.",
      registers: [registry],
      collect() {
        const s = server();
        if (s !== undefined) this.set(s.callsInFlight);
      },
    });
    new Gauge({
      name: "kv_scans_active",
      help: "Scans streaming now (their iterators open).",
      registers: [registry],
      collect() {
        const s = server();
        if (s !== undefined) this.set(s.scans.active);
      },
    });
    mirroredCounter(
      registry,
      "kv_scan_rows_sent_total",
      "Rows sent by scans.",
      () => server()?.scans.rowsSent ?? 0,
    );
    mirroredCounter(
      registry,
      "kv_scan_bytes_sent_total",
      "Key and value bytes sent by scans.",
      () => server()?.scans.bytesSent ?? 0,
    );
  }

  /** Called before each scrape (e.g. ClusterMetrics.beforeScrape, which shares the registry). */
  readonly scrapeHooks: (() => void)[] = [];

  /** The text exposition of every metric (what GET /metrics returns). */
  async text(): Promise<string> {
    this.snapshot = undefined;
    for (const hook of this.scrapeHooks) hook();
    try {
      return await this.registry.metrics();
    } finally {
      this.snapshot = undefined;
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Store event listener: pass as (or call from) the store's `onEvent`. */
  readonly onEvent = (event: StoreEvent): void => {
    switch (event.type) {
      case "flush":
        this.flushSeconds.observe(event.durationMs / 1000);
        this.flushBytes.inc(event.bytes);
        break;
      case "compaction":
        this.compactionSeconds.observe(
          { level: String(event.level), kind: event.trivialMove ? "move" : "rewrite" },
          event.durationMs / 1000,
        );
        this.compactionBytesRead.inc(event.bytesRead);
        this.compactionBytesWritten.inc(event.bytesWritten);
        break;
      case "compaction-failed":
        this.compactionFailures.inc();
        break;
      case "log-failed":
        this.walFailures.inc({ op: event.op });
        break;
      case "resumed":
        this.writeResumptions.inc();
        break;
      case "stall":
        this.stallState.reset();
        this.stallState.set({ cause: event.cause ?? "none" }, STALL_STATE_VALUE[event.state]);
        break;
      default:
        break;
    }
  };

  /** Server call observer: pass as the server's `onCall`. `code` is a gRPC status. */
  readonly onCall = (method: string, code: status, durationMs: number): void => {
    this.rpcCalls.inc({ method, code: status[code] ?? String(code) });
    this.rpcSeconds.observe({ method }, durationMs / 1000);
  };
}
