/**
 * Conformance of the server's gRPC over HTTP/2, on both transports (the lean path, the
 * default, and grpc-js), driven by three clients: grpc-js (KvClient and its raw Client),
 * Python grpcio (python3-grpcio for /usr/bin/python3; skipped with a message when absent)
 * and raw HTTP/2 requests (a node:http2 session). The store is in memory.
 *
 * Both transports: every status code the service promises, deadlines (grpc-timeout),
 * cancellation mid-stream, unknown methods, oversized and malformed messages, a client
 * that stops reading a Scan, health and reflection. The details only the lean path
 * promises (HTTP statuses for a wrong method or content type, te optional, compression
 * refused, grpc-timeout syntax, message counts of unary calls, metadata round trips,
 * streaming requests with back-pressure) are in lean-protocol.test.ts.
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as http2 from "node:http2";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import { isKvClientError, KvClient, status } from "../../src/client/index.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import {
  GetRequestSchema,
  GetResponseSchema,
  ScanRequestSchema,
} from "../../src/proto/gen/kv/v1/kv_pb.js";
import { KvServer, TRANSPORTS } from "../../src/server/index.js";
import { frame, rawCall } from "../support/raw-grpc.js";
import { waitFor } from "../support/wait-for.js";

const PYTHON = "/usr/bin/python3";
const PY_CLIENT = fileURLToPath(
  new URL("../../../test/fixtures/grpcio-client.py", import.meta.url),
);

function grpcioAvailable(): string | undefined {
  try {
    execFileSync(PYTHON, ["-c", "import grpc"], { stdio: "ignore" });
    return undefined;
  } catch {
    return `${PYTHON} has no grpc module (apt-get install python3-grpcio)`;
  }
}

async function withServer(
  transport: (typeof TRANSPORTS)[number],
  body: (server: KvServer, store: KvStore) => Promise<void>,
  limits = {},
): Promise<void> {
  const store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
  const server = await KvServer.start(store, { port: 0, transport, limits });
  try {
    await body(server, store);
  } finally {
    await server.shutdown(0);
    await store.close();
  }
}

function session(server: KvServer): http2.ClientHttp2Session {
  const s = http2.connect(`http://${server.address}`);
  s.on("error", () => {});
  return s;
}

async function code(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "OK";
  } catch (err) {
    assert.ok(isKvClientError(err), String(err));
    return err.codeName;
  }
}

const GRPC = { ":method": "POST", "content-type": "application/grpc", te: "trailers" };

const scanAllRequest = () =>
  toBinary(ScanRequestSchema, {
    $typeName: "kv.v1.ScanRequest",
    startKey: Buffer.alloc(0),
    endKey: Buffer.alloc(0),
    limit: 0n,
    serializable: false,
  });

const get = (key: string) =>
  toBinary(GetRequestSchema, {
    $typeName: "kv.v1.GetRequest",
    key: Buffer.from(key),
    serializable: false,
  });

for (const transport of TRANSPORTS) {
  describe(`over ${transport}`, () => {
    test("status codes through grpc-js: OK, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED, UNAVAILABLE", async () => {
      const store = await open("/db", { fs: new MemoryFileSystem() });
      const server = await KvServer.start(store, {
        port: 0,
        transport,
        limits: { maxKeyBytes: 10, maxReceiveMessageBytes: 1000 },
      });
      const client = new KvClient(server.address, { timeoutMs: 10_000 });
      try {
        assert.equal(await code(client.put("k", "v")), "OK");
        assert.equal(String(await client.get("k")), "v");
        assert.equal(await client.get("absent"), undefined);
        assert.equal(await code(client.put("", "v")), "INVALID_ARGUMENT");
        assert.equal(await code(client.scanAll("b", "a")), "INVALID_ARGUMENT");
        assert.equal(await code(client.put("k".repeat(11), "v")), "RESOURCE_EXHAUSTED");
        assert.equal(await code(client.put("k", Buffer.alloc(2000))), "RESOURCE_EXHAUSTED");
        const raw = new Client(server.address, credentials.createInsecure());
        const unknown = await new Promise<number>((resolve) =>
          raw.makeUnaryRequest(
            "/kv.v1.KvService/Nope",
            (b: Buffer) => b,
            (b: Buffer) => b,
            Buffer.alloc(0),
            new Metadata(),
            {},
            (err) => resolve(err?.code ?? 0),
          ),
        );
        raw.close();
        assert.equal(status[unknown], "UNIMPLEMENTED");
        await store.close();
        assert.equal(await code(client.get("k")), "UNAVAILABLE");
      } finally {
        client.close();
        await server.shutdown(0);
      }
    });

    test("deadlines: a call past its grpc-timeout ends DEADLINE_EXCEEDED and its scan is released", async () => {
      await withServer(transport, async (server, store) => {
        const batch = store.batch();
        for (let i = 0; i < 200; i++)
          batch.put(`row/${String(i).padStart(3, "0")}`, Buffer.alloc(60_000, 1));
        await store.write(batch);
        // A raw client that never reads: only the server's deadline can end the call. grpc-js's
        // server does not end a call whose deadline passes while its stream waits for the
        // client's window (the scan stays open), so this part is the lean path's alone.
        if (transport === "lean") {
          const s = session(server);
          try {
            const req = s.request({
              ...GRPC,
              ":path": "/kv.v1.KvService/Scan",
              "grpc-timeout": "300m",
            });
            req.on("error", () => {});
            req.pause();
            req.end(frame(scanAllRequest()));
            await waitFor(() => server.stats().scans.active === 1, "the scan to start");
            await waitFor(
              () => server.stats().scans.active === 0 && store.stats().openIterators === 0,
              "the deadline to release the scan",
            );
            req.close();
          } finally {
            s.close();
          }
        }
        const client = new KvClient(server.address);
        try {
          assert.equal(
            await code(client.scanAll(undefined, undefined, 0, { timeoutMs: 1 })),
            "DEADLINE_EXCEEDED",
          );
          await waitFor(() => store.stats().openIterators === 0, "the expired scan to be released");
        } finally {
          client.close();
        }
      });
    });

    test("cancellation mid-stream (RST_STREAM) releases the scan's iterator", async () => {
      await withServer(transport, async (server, store) => {
        const batch = store.batch();
        for (let i = 0; i < 300; i++)
          batch.put(`row/${String(i).padStart(3, "0")}`, Buffer.alloc(50_000, 2));
        await store.write(batch);
        const client = new KvClient(server.address);
        try {
          const batches = client.scanBatches();
          assert.equal((await batches.next()).done, false);
          assert.equal(store.stats().openIterators, 1);
          await batches.return(undefined);
          await waitFor(
            () => store.stats().openIterators === 0 && server.stats().scans.active === 0,
            "the cancelled scan to be released",
          );
          assert.equal(await code(client.put("after", "x")), "OK");
        } finally {
          client.close();
        }
      });
    });

    test("raw HTTP/2: unknown method, malformed and oversized messages", async () => {
      await withServer(
        transport,
        async (server) => {
          const s = session(server);
          try {
            const unknown = await rawCall(s, { ":path": "/no.Such/Method" }, [
              frame(Buffer.alloc(0)),
            ]);
            assert.equal(unknown.httpStatus, 200);
            assert.equal(unknown.grpcStatus, status.UNIMPLEMENTED);
            const malformed = await rawCall(s, { ":path": "/kv.v1.KvService/Get" }, [
              frame(Buffer.from([0x0a, 0x7f])),
            ]);
            assert.equal(malformed.grpcStatus, status.INTERNAL, malformed.grpcMessage);
            const oversized = await rawCall(s, { ":path": "/kv.v1.KvService/Put" }, [
              frame(Buffer.alloc(5000)),
            ]);
            assert.equal(oversized.grpcStatus, status.RESOURCE_EXHAUSTED, oversized.grpcMessage);
            assert.match(oversized.grpcMessage ?? "", /larger than max/i);
            const ok = await rawCall(s, { ":path": "/kv.v1.KvService/Get" }, [frame(get("x"))]);
            assert.equal(ok.grpcStatus, status.OK);
            assert.equal(fromBinary(GetResponseSchema, ok.messages[0]!).found, false);
          } finally {
            s.close();
          }
        },
        { maxReceiveMessageBytes: 4096 },
      );
    });

    test("a raw client that stops reading a Scan holds a bounded share of it", async () => {
      await withServer(transport, async (server, store) => {
        const rows = 256;
        const batch = store.batch();
        for (let i = 0; i < rows; i++)
          batch.put(`row/${String(i).padStart(3, "0")}`, Buffer.alloc(64 * 1024, 3));
        await store.write(batch);
        const s = session(server);
        try {
          const req = s.request({
            ":method": "POST",
            ":path": "/kv.v1.KvService/Scan",
            "content-type": "application/grpc",
            te: "trailers",
          });
          req.on("error", () => {});
          req.pause();
          req.end(
            frame(
              toBinary(ScanRequestSchema, {
                $typeName: "kv.v1.ScanRequest",
                startKey: Buffer.alloc(0),
                endKey: Buffer.alloc(0),
                limit: 0n,
                serializable: false,
              }),
            ),
          );
          let last = -1;
          let stableSince = Date.now();
          await waitFor(() => {
            const now = server.stats().scans.bytesSent;
            if (now !== last) {
              last = now;
              stableSince = Date.now();
            }
            return now > 0 && Date.now() - stableSince > 300;
          }, "the scan to stall");
          const total = rows * 64 * 1024;
          assert.ok(
            last < total / 4,
            `the server produced ${last} of ${total} bytes for a client that reads nothing`,
          );
          assert.equal(store.stats().openIterators, 1);
          req.close(http2.constants.NGHTTP2_CANCEL);
          await waitFor(() => store.stats().openIterators === 0, "the iterator to close");
        } finally {
          s.close();
        }
      });
    });

    test("Python grpcio: every KV method, errors, cancellation, health and reflection", async (t) => {
      const missing = grpcioAvailable();
      if (missing !== undefined) {
        t.skip(missing);
        return;
      }
      await withServer(transport, async (server) => {
        const out = await new Promise<string>((resolve, reject) =>
          execFile(
            PYTHON,
            [PY_CLIENT, server.address],
            { timeout: 60_000 },
            (err, stdout, stderr) =>
              err === null ? resolve(stdout) : reject(new Error(`${err.message}\n${stderr}`)),
          ),
        );
        const seen = JSON.parse(out) as Record<string, unknown>;
        assert.equal(seen["get"], "00ff76616c7565");
        assert.equal(seen["found"], 1);
        assert.deepEqual(
          seen["scan"],
          Array.from({ length: 30 }, (_, i) => `py/${String(i).padStart(2, "0")}`),
        );
        assert.equal(seen["empty_key"], "INVALID_ARGUMENT");
        assert.match(String(seen["empty_key_message"]), /key must not be empty/);
        assert.equal(seen["unknown"], "UNIMPLEMENTED");
        assert.equal(seen["malformed"], "INTERNAL");
        assert.equal(seen["oversized"], "RESOURCE_EXHAUSTED");
        assert.equal(seen["health"], 1);
        const services = seen["services"] as string[];
        assert.ok(services.includes("kv.v1.KvService"), services.join());
        assert.ok(services.includes("grpc.health.v1.Health"), services.join());
      });
    });
  });
}
