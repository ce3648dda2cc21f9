/**
 * Observability: the Prometheus metrics follow the store's own counters and events, the
 * event log writes one structured line per event, and `kv-engine serve --metrics-port`
 * serves both over HTTP while logging to stderr.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { pino } from "pino";
import { KvClient } from "../../src/client/index.js";
import { MemoryFileSystem, open, type StoreEvent } from "../../src/index.js";
import { eventLogger } from "../../src/observability/event-log.js";
import { KvMetrics } from "../../src/observability/metrics.js";
import { startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

/** The value of the sample `name{labels}` in a text exposition, or undefined. */
function sample(text: string, name: string, labels = ""): number | undefined {
  const wanted = labels === "" ? name : `${name}{${labels}}`;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    if (line.slice(0, at) === wanted) return Number(line.slice(at + 1));
  }
  return undefined;
}

const keyOf = (i: number) => `key${String(i).padStart(6, "0")}`;

describe("metrics", () => {
  test("gauges and counters follow the store; flush and compaction events fill histograms", async () => {
    const metrics = new KvMetrics();
    const db = await open("/db", {
      fs: new MemoryFileSystem(),
      writeBufferSize: 16 * 1024,
      // A few blocks' worth: the gets below meet a full cache, which declines some blocks.
      blockCacheSize: 16 * 1024,
      onEvent: metrics.onEvent,
    });
    assert.equal(sample(await metrics.text(), "kv_flushes_total"), 0, "no store yet: zeros");
    metrics.store = db;
    for (let i = 0; i < 2000; i++) await db.put(keyOf(i % 700), "v".repeat(100), { sync: false });
    await db.flush();
    await db.compactRange();
    for (let i = 0; i < 100; i++) await db.get(keyOf(i * 7));
    const it = db.iterator();
    const text = await metrics.text();
    const s = db.stats();
    assert.equal(sample(text, "kv_flushes_total"), s.flushes);
    assert.ok(s.flushes > 0);
    assert.equal(sample(text, "kv_flush_duration_seconds_count"), s.flushes);
    assert.equal(sample(text, "kv_flush_bytes_total"), s.flushBytes);
    assert.equal(sample(text, "kv_compactions_total"), s.compaction.compactions);
    assert.equal(sample(text, "kv_compaction_bytes_written_total"), s.compaction.bytesWritten);
    const last = s.levelFiles.length - 1;
    assert.equal(sample(text, "kv_level_files", `level="${last}"`), s.levelFiles[last]);
    assert.equal(sample(text, "kv_level_bytes", `level="${last}"`), s.levelBytes[last]);
    assert.equal(sample(text, "kv_commit_batches_total"), s.commit.batches);
    assert.equal(sample(text, "kv_bloom_filter_checked_total"), s.bloomFilter.checked);
    assert.ok(s.bloomFilter.checked > 0);
    assert.equal(sample(text, "kv_block_cache_misses_total"), s.blockCache.misses);
    assert.ok(s.blockCache.rejected > 0);
    assert.equal(sample(text, "kv_block_cache_rejected_total"), s.blockCache.rejected);
    assert.equal(sample(text, "kv_open_iterators"), 1);
    assert.equal(sample(text, "kv_last_sequence"), s.lastSequence);
    await it.close();
    // Counters mirror growth between scrapes.
    for (let i = 0; i < 10; i++) await db.put(`more${i}`, "x");
    assert.equal(sample(await metrics.text(), "kv_commit_batches_total"), s.commit.batches + 10);
    await db.close();
  });

  test("calls are counted by method and status name", async () => {
    const metrics = new KvMetrics();
    metrics.onCall("Put", status.OK, 1.5);
    metrics.onCall("Put", status.OK, 0.5);
    metrics.onCall("Get", status.INVALID_ARGUMENT, 0.1);
    const text = await metrics.text();
    assert.equal(sample(text, "kv_rpc_calls_total", 'method="Put",code="OK"'), 2);
    assert.equal(sample(text, "kv_rpc_calls_total", 'method="Get",code="INVALID_ARGUMENT"'), 1);
    assert.equal(sample(text, "kv_rpc_duration_seconds_count", 'method="Put"'), 2);
  });
});

describe("event log", () => {
  test("one JSON line per event, at the documented level", () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(JSON.parse(l));
        done();
      },
    });
    const log = eventLogger(pino({ level: "info" }, sink));
    const events: StoreEvent[] = [
      {
        type: "open",
        logsReplayed: 1,
        batchesReplayed: 3,
        entriesReplayed: 5,
        tornTailBytes: 7,
        regionsDropped: 0,
        lastSequence: 5,
        durationMs: 1.23,
      },
      { type: "flush", fileNumber: 9, entries: 100, bytes: 4096, durationMs: 2 },
      { type: "stall", state: "stopped", cause: "level0", previousMs: 10 },
      { type: "stall", state: "normal", cause: undefined, previousMs: 20 },
      { type: "compaction-failed", message: "EIO", consecutiveFailures: 1, retryInMs: 100 },
      { type: "background-error", code: "IO_ERROR", message: "flush failed", recoverable: false },
    ];
    for (const e of events) log(e);
    assert.deepEqual(
      lines.map((l) => [l["event"], l["level"]]),
      [
        ["open", 30],
        ["open", 30], // the torn tail of 7 bytes
        ["flush", 30],
        ["stall", 40],
        ["stall", 30],
        ["compaction-failed", 40],
        ["background-error", 50],
      ],
    );
    assert.equal(lines[0]?.["entriesReplayed"], 5);
    assert.equal(lines[1]?.["tornTailBytes"], 7);
    assert.equal(lines[2]?.["bytes"], 4096);
  });
});

describe("kv-engine serve --metrics-port", () => {
  test("serves /metrics with RPC and engine figures, and logs events to stderr", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const server = await startServer(dir.path, ["--metrics-port", "0", "--log-level", "info"]);
    t.after(() => server.stop());
    await waitFor(() => /"event":"metrics"/.test(server.stderr()), "the metrics line");
    const port = Number(/"port":(\d+)/.exec(server.stderr())?.[1]);
    const client = new KvClient(server.address);
    t.after(() => client.close());
    await client.put("a", "1");
    await client.put("b", "2");
    assert.equal(await client.get("zz"), undefined);
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.equal(sample(text, "kv_rpc_calls_total", 'method="Put",code="OK"'), 2);
    assert.equal(sample(text, "kv_rpc_calls_total", 'method="Get",code="OK"'), 1);
    // The two puts, after the batch that gave the new store its revisions.
    assert.equal(sample(text, "kv_commit_batches_total"), 3);
    assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    assert.equal(await server.stop(), 0);
    const logged = server
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(logged.some((l) => l["event"] === "open"));
    assert.ok(logged.some((l) => l["event"] === "closed"));
  });
});
