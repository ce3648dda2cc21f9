/**
 * GrpcClient (src/grpc/grpc-client.ts) on its own: a port that accepts and never speaks
 * HTTP/2 ends the connection at the handshake timeout (a call without a deadline does not
 * hang), and a server's trailers come back as Metadata with the status.
 */
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { GrpcCallError, GrpcClient } from "../../src/grpc/grpc-client.js";
import { Status } from "../../src/grpc/status.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { PutRequestSchema } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { KvServer } from "../../src/server/index.js";

test("a silent port: the connection ends at the handshake timeout, the call says why", async () => {
  const sockets: Socket[] = [];
  const silent = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  const port = (silent.address() as { port: number }).port;
  const c = new GrpcClient(`127.0.0.1:${port}`, { connection: { handshakeTimeoutMs: 200 } });
  try {
    const started = Date.now();
    await assert.rejects(c.unary("/a.B/C", Buffer.alloc(0)), (e: unknown) => {
      assert.ok(e instanceof GrpcCallError, String(e));
      assert.equal(e.code, Status.UNAVAILABLE);
      assert.equal(e.transport?.kind, "no-connection");
      assert.match(e.details, /did not start HTTP\/2 within 0\.2 s/);
      return true;
    });
    assert.ok(Date.now() - started < 5000);
  } finally {
    c.close();
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test("a refusal's trailers come back as metadata; an OK answer as its message", async () => {
  const store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
  const server = await KvServer.start(store, { port: 0 });
  const c = new GrpcClient(server.address);
  try {
    const put = (key: string) =>
      toBinary(
        PutRequestSchema,
        create(PutRequestSchema, { key: Buffer.from(key), value: Buffer.from("v") }),
      );
    const ok = await c.unary("/kv.v1.KvService/Put", put("k"), { timeoutMs: 5000 });
    assert.ok(Buffer.isBuffer(ok));
    await store.close(); // the store's CLOSED: a KvError, sent with its kv-error trailer
    await assert.rejects(c.unary("/kv.v1.KvService/Put", put("k2")), (e: unknown) => {
      assert.ok(e instanceof GrpcCallError, String(e));
      assert.equal(e.code, Status.UNAVAILABLE);
      assert.equal(e.transport, undefined);
      assert.equal(e.metadata.getString("kv-error"), "CLOSED");
      assert.equal(e.metadata.getString("content-type"), undefined);
      return true;
    });
    assert.equal(c.connections, 1);
  } finally {
    c.close();
    await server.shutdown(0);
    await store.close();
  }
});
