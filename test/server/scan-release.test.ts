/**
 * A scan holds an engine iterator (and the view it pins) only while its call lives:
 * cancellation, an expired deadline and a client that disconnects all release it at
 * once; and a client that reads one message and stops cannot make the server read (and
 * buffer) the rest of the range.
 */
import assert from "node:assert/strict";
import { after, before, type TestContext, test } from "node:test";
import { KvClient } from "../../src/client/index.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { KvServer } from "../../src/server/index.js";
import { exited, firstLine, fixture, startNode } from "../support/child.js";
import { waitFor } from "../support/wait-for.js";

const ROWS = 512;
const VALUE_BYTES = 64 * 1024; // 32 MiB in all: far more than any buffer on the way
let store: KvStore;
let server: KvServer;

before(async () => {
  store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
  const value = Buffer.alloc(VALUE_BYTES, 0x5a);
  for (let i = 0; i < ROWS; i += 32) {
    const batch = store.batch();
    for (let j = i; j < i + 32; j++) batch.put(`row/${String(j).padStart(4, "0")}`, value);
    await store.write(batch);
  }
  server = await KvServer.start(store, { port: 0 });
});

after(async () => {
  await server.shutdown(0);
  await store.close();
});

const openIterators = () => store.stats().openIterators;

async function released(what: string): Promise<void> {
  await waitFor(() => openIterators() === 0 && server.stats().scans.active === 0, what);
  assert.equal(store.stats().openSnapshots, 0);
}

/** A client closed when the test ends, pass or fail (an open channel keeps the process alive). */
function clientFor(t: TestContext): KvClient {
  const client = new KvClient(server.address);
  t.after(() => client.close());
  return client;
}

/** Waits until the server's bytes sent stop growing (the stream is blocked). */
async function settledBytesSent(): Promise<number> {
  let last = -1;
  let stableSince = Date.now();
  await waitFor(() => {
    const now = server.stats().scans.bytesSent;
    if (now !== last) {
      last = now;
      stableSince = Date.now();
    }
    return Date.now() - stableSince > 300;
  }, "the scan to stop sending");
  return last;
}

test("a client that reads one message and stops: the server stops reading", async (t) => {
  const client = clientFor(t);
  const before = server.stats().scans.bytesSent;
  const batches = client.scanBatches();
  const first = await batches.next();
  assert.equal(first.done, false);
  const sent = (await settledBytesSent()) - before;
  const total = ROWS * VALUE_BYTES;
  assert.equal(openIterators(), 1, "the stalled scan still holds its iterator");
  assert.ok(sent > 0);
  assert.ok(
    sent < total / 4,
    `server produced ${sent} of ${total} bytes for a client that read one message`,
  );
  // Reading on resumes the stream and yields every row.
  let rows = first.value!.length;
  for await (const batch of batches) rows += batch.length;
  assert.equal(rows, ROWS);
  await released("the iterator to close at the end of the scan");
});

test("cancelling a scan mid-way releases its iterator", async (t) => {
  const client = clientFor(t);
  const batches = client.scanBatches();
  await batches.next();
  await waitFor(() => openIterators() === 1, "the scan to hold an iterator");
  await batches.return(undefined); // cancels the call
  await released("the iterator to close after cancellation");
});

test("a scan whose deadline expires mid-way releases its iterator", async (t) => {
  const client = clientFor(t);
  const batches = client.scanBatches(undefined, undefined, 0, { timeoutMs: 500 });
  await batches.next();
  // Stop reading; the server's deadline ends the call.
  await released("the iterator to close when the deadline expires");
  await assert.rejects(
    (async () => {
      for await (const _ of batches);
    })(),
    (err: unknown) => err instanceof Error && /DEADLINE_EXCEEDED/.test(err.message),
  );
});

test("a client that disconnects mid-scan (killed) releases its iterator", async (t) => {
  const child = startNode(fixture("scan-and-stall"), [server.address]);
  t.after(() => child.kill("SIGKILL"));
  assert.equal(await firstLine(child), "read");
  assert.equal(openIterators(), 1);
  child.kill("SIGKILL");
  await exited(child);
  await released("the iterator to close after the client died");
});
