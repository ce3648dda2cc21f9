/**
 * A scan reads the snapshot taken when it starts: while it is stalled half-way, other
 * clients overwrite, delete and insert keys and the store flushes and compacts, and the
 * scan still yields exactly the rows of its snapshot, each once, in key order.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KvClient } from "../../src/client/index.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { KvServer } from "../../src/server/index.js";
import { waitFor } from "../support/wait-for.js";

const KEYS = 1000;
const VALUE_BYTES = 8 * 1024; // 8 MiB in all: the scan cannot be buffered whole
const key = (i: number) => `k${String(i).padStart(4, "0")}`;
const value = (tag: string, i: number) => `${tag}:${key(i)}:`.padEnd(VALUE_BYTES, ".");

test("scan isolation while other clients write and the store flushes and compacts", async (t) => {
  const store = await open("/db", {
    fs: new MemoryFileSystem(),
    writeBufferSize: 256 * 1024,
    sync: false,
  });
  const server = await KvServer.start(store, { port: 0 });
  const reader = new KvClient(server.address);
  const writer = new KvClient(server.address);
  t.after(async () => {
    reader.close();
    writer.close();
    await server.shutdown(0);
    await store.close();
  });

  for (let i = 0; i < KEYS; i += 50) {
    await writer.write(
      Array.from({ length: 50 }, (_, j) => ({
        type: "put" as const,
        key: key(i + j),
        value: value("v1", i + j),
      })),
    );
  }

  const batches = reader.scanBatches();
  const first = await batches.next();
  assert.equal(first.done, false);
  const rows: Array<[string, string]> = first.value!.map(([k, v]) => [k.toString(), v.toString()]);
  // Let the server run until back-pressure stops it, then check it is mid-way.
  let last = -1;
  await waitFor(async () => {
    const now = server.stats().scans.rowsSent;
    const same = now === last;
    last = now;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return same;
  }, "the scan to stall");
  assert.ok(last < KEYS, `the server already sent ${last} of ${KEYS} rows`);

  // Concurrent changes from another client: overwrite all, delete some, insert new keys.
  const flushesBefore = store.stats().flushes;
  await Promise.all(
    Array.from({ length: KEYS }, (_, i) =>
      i % 3 === 0 ? writer.delete(key(i)) : writer.put(key(i), value("v2", i)),
    ),
  );
  await writer.write([
    { type: "put", key: `${key(10)}a`, value: "inserted" },
    { type: "put", key: "a-before-all", value: "inserted" },
    { type: "put", key: "z-after-all", value: "inserted" },
  ]);
  await store.flush();
  await store.compactRange();
  await writer.put(key(KEYS - 1), value("v3", KEYS - 1));
  await store.flush();
  assert.ok(store.stats().flushes > flushesBefore, "the store flushed meanwhile");
  assert.ok(store.stats().compaction.compactions > 0, "the store compacted meanwhile");

  for await (const batch of batches) {
    for (const [k, v] of batch) rows.push([k.toString(), v.toString()]);
  }
  assert.equal(rows.length, KEYS);
  rows.forEach(([k, v], i) => {
    assert.equal(k, key(i));
    assert.equal(v, value("v1", i), `row ${k} is from the scan's snapshot`);
  });

  // A new scan sees the new state.
  const now = await reader.scanAll();
  // Deleted every third key; put back the last one (999 % 3 === 0); inserted three.
  assert.equal(now.length, KEYS - Math.ceil(KEYS / 3) + 1 + 3);
  assert.equal(now[0]![0].toString(), "a-before-all");
  assert.equal((await reader.get(key(1)))?.toString(), value("v2", 1));
  assert.equal(await reader.get(key(0)), undefined);
  assert.equal(store.stats().openIterators, 0);
});
