/**
 * Client sessions at the service (kv.v1 OpenSession and the `session` field of writes):
 * a backend without sessions answers OpenSession UNIMPLEMENTED and refuses a write that
 * carries one (FAILED_PRECONDITION, nothing stored); a backend with sessions gets each
 * write's session as a number triple; malformed sessions are INVALID_ARGUMENT, through
 * both transports.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { Client, credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import type { BackendWriteOptions, ClientSession, KvBackend } from "../../src/db/kv-backend.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import type { SessionCall } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition } from "../../src/proto/kv-service-definition.js";
import { KvServer } from "../../src/server/index.js";

type Method = keyof typeof kvServiceDefinition;

function call(raw: Client, name: Method, request: unknown): Promise<unknown> {
  const m = kvServiceDefinition[name] as {
    path: string;
    requestSerialize: (r: unknown) => Buffer;
    responseDeserialize: (b: Buffer) => unknown;
  };
  return new Promise((resolve, reject) => {
    raw.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      new Metadata(),
      {},
      (err: ServiceError | null, response?: unknown) => (err ? reject(err) : resolve(response)),
    );
  });
}

const session = (id: bigint, seq: bigint, ackedBelow: bigint): SessionCall => ({
  $typeName: "kv.v1.SessionCall",
  id,
  seq,
  ackedBelow,
});

const put = (key: string, s?: SessionCall) => ({
  $typeName: "kv.v1.PutRequest",
  key: Buffer.from(key),
  value: Buffer.from("v"),
  ...(s === undefined ? {} : { session: s }),
});

async function rejectsWith(p: Promise<unknown>, code: status, message: RegExp): Promise<void> {
  await assert.rejects(p, (err: ServiceError) => {
    assert.equal(err.code, code, err.message);
    assert.match(err.details, message);
    return true;
  });
}

async function start(t: TestContext, backend: KvBackend, transport: "lean" | "grpc-js") {
  const server = await KvServer.start(backend, { port: 0, transport });
  const raw = new Client(server.address, credentials.createInsecure());
  t.after(async () => {
    raw.close();
    await server.shutdown(0);
  });
  return raw;
}

for (const transport of ["lean", "grpc-js"] as const) {
  test(`${transport}: a server without sessions says so and stores nothing`, async (t) => {
    const store = await open("/db", { fs: new MemoryFileSystem() });
    t.after(() => store.close());
    const raw = await start(t, store, transport);
    await rejectsWith(
      call(raw, "OpenSession", { $typeName: "kv.v1.OpenSessionRequest" }),
      status.UNIMPLEMENTED,
      /keeps no client sessions/,
    );
    await rejectsWith(
      call(raw, "Put", put("k", session(1n, 1n, 1n))),
      status.FAILED_PRECONDITION,
      /keeps no client sessions/,
    );
    assert.equal(await store.get("k"), undefined);
  });

  test(`${transport}: a backend with sessions gets each write's session`, async (t) => {
    const store = await open("/db", { fs: new MemoryFileSystem() });
    t.after(() => store.close());
    const seen: Array<BackendWriteOptions["session"]> = [];
    const backend: KvBackend = Object.assign(Object.create(store) as KvBackend, {
      openSession: (): Promise<ClientSession> => Promise.resolve({ id: 42, ttlMs: 1000 }),
      put: (key: Uint8Array, value: Uint8Array, o?: BackendWriteOptions) => {
        seen.push(o?.session);
        return store.put(key, value);
      },
    });
    const raw = await start(t, backend, transport);
    const opened = await call(raw, "OpenSession", { $typeName: "kv.v1.OpenSessionRequest" });
    assert.deepEqual(
      [(opened as { id: bigint }).id, (opened as { ttlMs: bigint }).ttlMs],
      [42n, 1000n],
    );
    await call(raw, "Put", put("a", session(42n, 3n, 2n)));
    await call(raw, "Put", put("b"));
    assert.deepEqual(seen, [{ id: 42, seq: 3, ackedBelow: 2 }, undefined]);
    for (const bad of [session(0n, 1n, 1n), session(42n, 0n, 1n), session(42n, 1n, 3n)]) {
      await rejectsWith(call(raw, "Put", put("c", bad)), status.INVALID_ARGUMENT, /session/);
    }
    await rejectsWith(
      call(raw, "Write", {
        $typeName: "kv.v1.WriteRequest",
        mutations: [
          {
            $typeName: "kv.v1.Mutation",
            op: { case: "put", value: put("d", session(42n, 4n, 1n)) },
          },
        ],
      }),
      status.INVALID_ARGUMENT,
      /set it on the WriteRequest/,
    );
    assert.equal(seen.length, 2);
    assert.equal(await store.get("c"), undefined);
  });
}
