/**
 * HTTP/2 abuse against the lean path (the default transport), beyond grpc-abuse.test.ts,
 * with hand-written frames over raw sockets: rapid stream reset (CVE-2023-44487), floods
 * of PINGs and of SETTINGS from a client that reads nothing, a header block past the
 * limit, streams that never send END_STREAM, and a client that opens huge windows, starts
 * scans and never reads. In each: the server stays up, a well-behaved client (its own
 * connection) keeps being served, the handlers running stay within the per-connection
 * stream limit, and the process's memory grows by less than a generous bound (printed).
 */
import assert from "node:assert/strict";
import { after, before, type TestContext, test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { KvClient } from "../../src/client/index.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { ScanRequestSchema } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { KvServer } from "../../src/server/index.js";
import { h2frame, RawH2, requestBlock } from "../support/raw-h2.js";
import { waitFor } from "../support/wait-for.js";

const MIB = 1024 * 1024;
/** RSS growth allowed per attack (the attacks would need GiBs if the server buffered them). */
const RSS_BOUND = 200 * MIB;
const END_STREAM = 1;
const END_HEADERS = 4;

let store: KvStore;
let server: KvServer;
let good: KvClient;
let port: number;

before(async () => {
  store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
  const batch = store.batch();
  for (let i = 0; i < 200; i++)
    batch.put(`row/${String(i).padStart(4, "0")}`, Buffer.alloc(64 * 1024, 0x62));
  await store.write(batch);
  server = await KvServer.start(store, { port: 0 });
  port = server.port;
  good = new KvClient(server.address, { timeoutMs: 20_000 });
});

after(async () => {
  good.close();
  await server.shutdown(0);
  await store.close();
});

async function stillServed(what: string): Promise<void> {
  await good.put(`probe/${what}`, what);
  assert.equal(
    String(await good.get(`probe/${what}`)),
    what,
    `${what}: the good client is not served`,
  );
}

/** Samples RSS while `attack` runs; returns the peak growth. */
async function peakRssGrowth(attack: () => Promise<void>): Promise<number> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  try {
    await attack();
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, process.memoryUsage().rss);
  return peak - before;
}

function report(t: TestContext, what: string, growth: number, extra = ""): void {
  t.diagnostic(`${what}: peak RSS growth ${(growth / MIB).toFixed(1)} MiB${extra}`);
  assert.ok(growth < RSS_BOUND, `${what}: RSS grew by ${(growth / MIB).toFixed(1)} MiB`);
}

const scanRequest = Buffer.from(
  (() => {
    const m = toBinary(ScanRequestSchema, {
      $typeName: "kv.v1.ScanRequest",
      startKey: Buffer.alloc(0),
      endKey: Buffer.alloc(0),
      limit: 0n,
      serializable: false,
    });
    const out = Buffer.alloc(5 + m.length);
    out.writeUInt32BE(m.length, 1);
    out.set(m, 5);
    return out;
  })(),
);
const SCAN = requestBlock("/kv.v1.KvService/Scan");

test("rapid reset: 20,000 scans opened and reset at once keep at most the stream limit of handlers running", async (t) => {
  let maxInFlight = 0;
  let raw: RawH2 | undefined;
  const growth = await peakRssGrowth(async () => {
    raw = new RawH2(port);
    await raw.ready;
    const rst = Buffer.alloc(4);
    rst.writeUInt32BE(8); // CANCEL
    let id = 1;
    for (let burst = 0; burst < 100 && !raw.closed; burst++) {
      const frames: Buffer[] = [];
      for (let i = 0; i < 200; i++, id += 2) {
        frames.push(
          h2frame(1, END_HEADERS, id, SCAN),
          h2frame(0, END_STREAM, id, scanRequest),
          h2frame(3, 0, id, rst),
        );
      }
      raw.write(...frames);
      await new Promise((r) => setImmediate(r));
      maxInFlight = Math.max(maxInFlight, server.stats().callsInFlight);
    }
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 10));
      maxInFlight = Math.max(maxInFlight, server.stats().callsInFlight);
    }
    await stillServed("rapid reset");
  });
  report(
    t,
    "rapid reset",
    growth,
    `, at most ${maxInFlight} handlers running, GOAWAY ${raw?.goaway !== undefined}`,
  );
  assert.ok(maxInFlight <= 100 + 2, `${maxInFlight} handlers ran at once`);
  raw?.destroy();
  await waitFor(() => store.stats().openIterators === 0, "the reset scans to be released");
});

for (const [what, frameOf] of [
  ["PING", () => h2frame(6, 0, 0, Buffer.alloc(8, 7))],
  ["SETTINGS", () => h2frame(4, 0, 0, Buffer.from([0, 4, 0, 1, 0, 0]))],
] as const) {
  test(`a flood of ${what} frames from a client that reads nothing ends that connection only`, async (t) => {
    let raw: RawH2 | undefined;
    const growth = await peakRssGrowth(async () => {
      raw = new RawH2(port);
      await raw.ready;
      raw.stopReading();
      const burst = Buffer.concat(Array.from({ length: 5000 }, frameOf));
      for (let i = 0; i < 40 && !raw.closed; i++) {
        raw.write(burst);
        await new Promise((r) => setImmediate(r));
      }
      // Reading again, the client finds what the server sent: a few replies, then GOAWAY.
      raw.socket.resume();
      await waitFor(() => raw!.goaway !== undefined, `the ${what} flood to be cut off`);
      await stillServed(`${what} flood`);
    });
    report(t, `${what} flood`, growth);
    assert.equal(raw?.goaway, 0xb, "GOAWAY ENHANCE_YOUR_CALM");
    raw?.destroy();
  });
}

test("a header block past the limit (CONTINUATION without end) gets GOAWAY and the connection closed", async (t) => {
  const raw = new RawH2(port);
  await raw.ready;
  const growth = await peakRssGrowth(async () => {
    raw.write(h2frame(1, 0, 1, SCAN));
    const junk = Buffer.alloc(16 * 1024, 0x41);
    for (let i = 0; i < 200 && !raw.closed; i++) {
      raw.write(h2frame(9, 0, 1, junk));
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => raw.closed, "the connection to be closed");
  });
  report(t, "endless header block", growth, `, GOAWAY code ${raw.goaway}`);
  assert.equal(raw.goaway, 0xb, "GOAWAY ENHANCE_YOUR_CALM");
  await stillServed("endless header block");
});

test("streams that never send END_STREAM hold only their connection's stream slots", async (t) => {
  const raw = new RawH2(port);
  await raw.ready;
  const growth = await peakRssGrowth(async () => {
    const frames: Buffer[] = [];
    // 150 Put calls whose request never ends (half a message each), over the limit of 100.
    for (let i = 0, id = 1; i < 150; i++, id += 2) {
      frames.push(
        h2frame(1, END_HEADERS, id, requestBlock("/kv.v1.KvService/Put")),
        h2frame(0, 0, id, Buffer.from([0, 0, 0, 0, 100, 1, 2])),
      );
    }
    raw.write(...frames);
    await waitFor(() => raw.resets >= 50, "the streams over the limit to be refused");
    await stillServed("endless streams");
  });
  report(t, "endless streams", growth, `, ${raw.resets} refused`);
  assert.equal(raw.resets, 50, "REFUSED_STREAM for the 50 streams over the limit");
  raw.destroy();
  await waitFor(
    () => server.stats().callsInFlight === 0,
    "the abandoned calls to end with their connection",
  );
});

test("a client that opens huge windows, starts 100 full scans and never reads: output stays bounded", async (t) => {
  const raw = new RawH2(port, [[4, 0x7fff_ffff]]);
  await raw.ready;
  const before = server.stats().scans.bytesSent;
  const total = 100 * 200 * 64 * 1024;
  const growth = await peakRssGrowth(async () => {
    raw.stopReading();
    const inc = Buffer.alloc(4);
    inc.writeUInt32BE(0x7fff_ffff - 65_535);
    const frames = [h2frame(8, 0, 0, inc)];
    for (let i = 0, id = 1; i < 100; i++, id += 2)
      frames.push(h2frame(1, END_HEADERS, id, SCAN), h2frame(0, END_STREAM, id, scanRequest));
    raw.write(...frames);
    let last = -1;
    let stableSince = Date.now();
    await waitFor(
      () => {
        const now = server.stats().scans.bytesSent;
        if (now !== last) {
          last = now;
          stableSince = Date.now();
        }
        return now > before && Date.now() - stableSince > 500;
      },
      "the scans to stall",
      30_000,
    );
    await stillServed("huge windows");
  });
  const sent = server.stats().scans.bytesSent - before;
  report(
    t,
    "huge windows, no reading",
    growth,
    `, ${(sent / MIB).toFixed(1)} of ${(total / MIB).toFixed(0)} MiB produced`,
  );
  assert.ok(sent < total / 10, `the server produced ${sent} bytes for a client that reads nothing`);
  raw.destroy();
  await waitFor(() => store.stats().openIterators === 0, "the scans to be released");
});
