/**
 * SIGTERM on a real server process: it stops accepting, lets calls in flight finish,
 * closes the store and exits 0, and every write it acknowledged is in the store after a
 * restart. Calls still running after the grace period are cancelled and the server
 * still exits 0 promptly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KvClient } from "../../src/client/index.js";
import { openServedStore } from "../support/served-store.js";
import { startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

test("SIGTERM with writes in flight: exit 0 and every acknowledged write survives", async (t) => {
  const dir = tempDir("kv-shutdown-");
  t.after(() => dir.remove());
  const server = await startServer(`${dir.path}/data`);
  t.after(() => server.stop("SIGKILL"));
  const client = new KvClient(server.address, { timeoutMs: 10_000 });
  t.after(() => client.close());

  const acked: string[] = [];
  let failures = 0;
  const WRITERS = 16;
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    for (let i = 0; ; i++) {
      const key = `w${w}/${i}`;
      try {
        if (i % 4 === 3) {
          await client.write([
            { type: "put", key, value: `value of ${key}` },
            { type: "put", key: `${key}/b`, value: "batch" },
          ]);
        } else {
          await client.put(key, `value of ${key}`);
        }
        acked.push(key);
      } catch {
        failures++;
        return; // the server is going away
      }
    }
  });
  while (acked.length < 300) await new Promise((resolve) => setTimeout(resolve, 5));
  const code = await server.stop("SIGTERM");
  await Promise.all(writers);
  assert.equal(code, 0, server.stderr());
  assert.match(server.stderr(), /SIGTERM received, shutting down/);
  assert.ok(failures > 0, "writers saw the server go away");

  // Reopening also proves the lock was released.
  const store = await openServedStore(`${dir.path}/data`);
  try {
    for (const key of acked) {
      assert.equal(await store.get(key), `value of ${key}`, key);
      if (Number(key.split("/")[1]) % 4 === 3) {
        assert.equal(await store.get(`${key}/b`), "batch", `${key}/b`);
      }
    }
  } finally {
    await store.close();
  }
});

test("a call still running after the grace period is cancelled; the server exits 0", async (t) => {
  const dir = tempDir("kv-shutdown-");
  t.after(() => dir.remove());
  const server = await startServer(`${dir.path}/data`, ["--shutdown-grace-ms", "300"]);
  t.after(() => server.stop("SIGKILL"));
  const client = new KvClient(server.address);
  t.after(() => client.close());
  const value = Buffer.alloc(64 * 1024, 0x42);
  for (let i = 0; i < 128; i++) await client.put(`big/${String(i).padStart(3, "0")}`, value);

  const stalled = client.scanBatches(); // read one message, then stop reading
  assert.equal((await stalled.next()).done, false);
  const code = await server.stop("SIGTERM");
  assert.equal(code, 0, server.stderr());
  await assert.rejects(async () => {
    for await (const _ of stalled);
  }, "the stalled scan ends with an error, not a silent truncation");
  const store = await openServedStore(`${dir.path}/data`);
  assert.equal(await store.count(), 128);
  await store.close();
});
