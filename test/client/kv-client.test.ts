/**
 * KvClient and AdminClient against a real server (in-process, memory store), once per
 * transport (lean and grpc-js, test/support/client-transports.ts): every call of the API,
 * values past a frame and a window both ways, calls past the server's stream limit, a
 * scan left early (the server releases it), TLS and mutual TLS, a bearer token, a
 * restarted server (the next call reconnects), and a client closed under calls in flight.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AdminClient,
  isKvClientError,
  KvClient,
  type KvClientOptions,
  status,
} from "../../src/client/index.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { KvServer, type KvServerOptions } from "../../src/server/index.js";
import { CLIENT_TRANSPORTS } from "../support/client-transports.js";
import { tempDir } from "../support/temp-dir.js";
import { makeTlsFiles, type TlsFiles } from "../support/tls-certs.js";
import { waitFor } from "../support/wait-for.js";

let dir: ReturnType<typeof tempDir>;
let tls: TlsFiles;
before(() => {
  dir = tempDir("kv-client-");
  tls = makeTlsFiles(dir.path);
});
after(() => dir.remove());

for (const transport of CLIENT_TRANSPORTS) {
  describe(`KvClient on ${transport}`, () => {
    const stops: (() => Promise<void> | void)[] = [];
    after(async () => {
      for (const s of stops.reverse()) await s();
    });

    async function serve(
      options: KvServerOptions = {},
      admin = false,
    ): Promise<{ server: KvServer; store: KvStore }> {
      const store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
      const server = await KvServer.start(store, {
        port: 0,
        ...options,
        ...(admin ? { admin: store } : {}),
      });
      stops.push(async () => {
        await server.shutdown(0);
        await store.close();
      });
      return { server, store };
    }

    function client(address: string, options: KvClientOptions = {}): KvClient {
      const c = new KvClient(address, { timeoutMs: 10_000, transport, ...options });
      stops.push(() => c.close());
      return c;
    }

    test("every call, values past a frame and a window both ways, 300 calls at once", async () => {
      const { server } = await serve({
        limits: { maxValueBytes: 8 << 20, maxReceiveMessageBytes: 16 << 20 },
      });
      const c = client(server.address);
      const big = Buffer.alloc(3 * 1024 * 1024 + 7, 0x5a);
      await c.put("big", big);
      assert.ok((await c.get("big"))?.equals(big));
      assert.equal(await c.get("absent"), undefined);
      await c.write([
        { type: "put", key: "a", value: "1" },
        { type: "put", key: "b", value: "2" },
        { type: "delete", key: "big" },
      ]);
      await c.delete("a");
      assert.deepEqual(
        (await c.scanAll()).map(([k, v]) => `${k}=${v}`),
        ["b=2"],
      );
      assert.deepEqual(await c.compareAndSwap("b", "1", "3"), {
        applied: false,
        current: Buffer.from("2"),
      });
      assert.equal((await c.compareAndSwap("b", "2", undefined)).applied, true);
      assert.equal(await c.get("b"), undefined);
      const keys = Array.from({ length: 300 }, (_, i) => `k${String(i).padStart(3, "0")}`);
      await Promise.all(keys.map((k) => c.put(k, `v-${k}`)));
      const values = await Promise.all(keys.map((k) => c.get(k)));
      assert.deepEqual(
        values.map((v) => v?.toString()),
        keys.map((k) => `v-${k}`),
      );
      const rows = await c.scanAll("k100", "k200", 50);
      assert.equal(rows.length, 50);
      assert.equal(rows[0]![0].toString(), "k100");
    });

    test("a scan left early is cancelled: the server releases it", async () => {
      const { server, store } = await serve();
      const c = client(server.address);
      const value = Buffer.alloc(64 * 1024, 0x61);
      for (let i = 0; i < 200; i += 20) {
        await c.write(
          Array.from({ length: 20 }, (_, j) => ({
            type: "put" as const,
            key: `r${String(i + j).padStart(4, "0")}`,
            value,
          })),
        );
      }
      const rows = c.scan();
      assert.equal((await rows.next()).value?.[0].toString(), "r0000");
      // A reader that takes no more holds the server back (flow control): it stalls.
      let last = -1;
      await waitFor(async () => {
        const now = server.stats().scans.rowsSent;
        const same = now === last;
        last = now;
        await new Promise((r) => setTimeout(r, 100));
        return same;
      }, "the scan to stall");
      assert.ok(last < 200, `the server sent ${last} of 200 rows to a reader that took one`);
      await rows.return(undefined);
      await waitFor(
        () => server.stats().scans.active === 0 && store.stats().openIterators === 0,
        "the scan to be released",
      );
    });

    test("TLS: trusted CA and serverName; mutual TLS; a bearer token", async () => {
      const { server } = await serve({
        tls: { cert: tls.serverCert, key: tls.serverKey, clientCa: tls.caCert },
        authToken: "t0ken",
      });
      const mutual = { ca: tls.caCert, cert: tls.clientCert, key: tls.clientKey };
      const good = client(server.address, { tls: mutual, authToken: "t0ken" });
      await good.put("k", "v");
      const named = client(`localhost:${server.port}`, {
        tls: { ...mutual, serverName: "localhost" },
        authToken: "t0ken",
      });
      assert.equal((await named.get("k"))?.toString(), "v");
      const https = client(`https://127.0.0.1:${server.port}`, {
        tls: mutual,
        authToken: "t0ken",
      });
      assert.equal((await https.scanAll()).length, 1);
      const noToken = client(server.address, { tls: mutual });
      await assert.rejects(noToken.get("k"), (e) => isKvClientError(e, status.UNAUTHENTICATED));
      const noCert = client(server.address, { tls: { ca: tls.caCert }, authToken: "t0ken" });
      await assert.rejects(noCert.put("x", "y"), (e) => {
        assert.ok(isKvClientError(e, status.UNAVAILABLE), String(e));
        assert.match(e.message, /TLS|certificate|connection/);
        return true;
      });
      const plain = client(server.address, { authToken: "t0ken" });
      await assert.rejects(plain.put("x", "y"), (e) => isKvClientError(e, status.UNAVAILABLE));
      assert.deepEqual(
        (await good.scanAll()).map(([k]) => k.toString()),
        ["k"],
      );
    });

    test("a server restarted on the same port: the next call reconnects", async () => {
      const store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
      let server = await KvServer.start(store, { port: 0 });
      const port = server.port;
      stops.push(async () => {
        await server.shutdown(0);
        await store.close();
      });
      const c = client(server.address);
      await c.put("k", "1");
      await server.shutdown(0);
      await assert.rejects(c.get("k"), (e) => {
        assert.ok(isKvClientError(e, status.UNAVAILABLE), String(e));
        return true;
      });
      server = await KvServer.start(store, { port });
      await waitFor(
        () =>
          c.get("k").then(
            (v) => v?.toString() === "1",
            () => false,
          ),
        "a call to the restarted server",
      );
    });

    test("a client closed under calls in flight: they fail as cancelled, later calls at once", async () => {
      const { server } = await serve();
      const c = client(server.address);
      await c.put("k", "v");
      const inFlight = c.put("k2", Buffer.alloc(4 * 1024 * 1024));
      c.close();
      const settled = await inFlight.then(
        () => undefined,
        (e: unknown) => e,
      );
      // The put may have gone out whole before the close: either outcome, never a hang.
      if (settled !== undefined)
        assert.ok(isKvClientError(settled, status.CANCELLED), String(settled));
      await assert.rejects(c.get("k"), (e) => isKvClientError(e, status.CANCELLED));
    });

    test("AdminClient: stats, flush and a compaction's progress stream", async () => {
      const { server } = await serve({}, true);
      const c = client(server.address);
      await c.put("k", "v");
      const admin = new AdminClient(server.address, { transport, timeoutMs: 10_000 });
      stops.push(() => admin.close());
      await admin.flush();
      assert.equal(typeof (await admin.stats()).flushes, "number");
      const steps = [];
      for await (const p of admin.compactRange()) steps.push(p);
      assert.ok(steps.at(-1)?.done, "the last message says done");
    });
  });
}
