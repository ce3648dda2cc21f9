/**
 * Every status code the service promises for bad input and trouble, with a message that
 * says what was wrong, and nothing stored by a refused request:
 * INVALID_ARGUMENT (empty key, mutation without an operation, inverted scan range),
 * RESOURCE_EXHAUSTED (key, value or message over the limits), DATA_LOSS (a corrupt
 * table), UNAVAILABLE (store closed), DEADLINE_EXCEEDED (a write stalled past its deadline).
 * UNAUTHENTICATED is covered in security.test.ts.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { Client, credentials, Metadata, status } from "@grpc/grpc-js";
import { isKvClientError, KvClient } from "../../src/client/index.js";
import { KvError, type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import type { WriteRequest } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition } from "../../src/proto/kv-service-definition.js";
import { KvServer } from "../../src/server/index.js";
import { STATUS_OF_KV_ERROR, statusOf } from "../../src/server/rpc-status.js";
import { GatedFileSystem } from "../support/gated-file-system.js";
import { waitFor } from "../support/wait-for.js";

const LIMITS = { maxKeyBytes: 100, maxValueBytes: 1000, maxReceiveMessageBytes: 4096 };

async function serve(
  t: TestContext,
  store: KvStore,
): Promise<{ server: KvServer; client: KvClient }> {
  const server = await KvServer.start(store, { port: 0, limits: LIMITS });
  const client = new KvClient(server.address, { timeoutMs: 10_000 });
  t.after(async () => {
    client.close();
    await server.shutdown(0);
    await store.close();
  });
  return { server, client };
}

/** Asserts `call` fails with `code` and a message matching `message`. */
async function fails(call: Promise<unknown>, code: status, message: RegExp): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(isKvClientError(err), `not a KvClientError: ${String(err)}`);
    assert.equal(err.codeName, status[code], err.message);
    assert.match(err.details, message);
    return true;
  });
}

test("refused requests get INVALID_ARGUMENT or RESOURCE_EXHAUSTED and store nothing", async (t) => {
  const store = await open("/db", { fs: new MemoryFileSystem() });
  const { server, client } = await serve(t, store);
  await client.put("existing", "value");
  const sequence = store.stats().lastSequence;
  const big = (n: number) => Buffer.alloc(n, 0x41);
  const INVALID = status.INVALID_ARGUMENT;
  const EXHAUSTED = status.RESOURCE_EXHAUSTED;

  await fails(client.put("", "v"), INVALID, /key must not be empty/);
  await fails(client.get(""), INVALID, /key must not be empty/);
  await fails(client.delete(""), INVALID, /key must not be empty/);
  await fails(
    client.write([
      { type: "put", key: "ok", value: "v" },
      { type: "delete", key: "" },
    ]),
    INVALID,
    /mutations\[1\]\.delete\.key must not be empty/,
  );
  await fails(client.scanAll("b", "a"), INVALID, /start_key is after end_key/);

  await fails(client.put(big(101), "v"), EXHAUSTED, /key is 101 bytes; .* limit is 100/);
  await fails(client.get(big(101)), EXHAUSTED, /key is 101 bytes/);
  await fails(client.delete(big(101)), EXHAUSTED, /key is 101 bytes/);
  await fails(client.put("k", big(1001)), EXHAUSTED, /value is 1001 bytes; .* limit is 1000/);
  await fails(
    client.write([
      { type: "put", key: "ok", value: "v" },
      { type: "put", key: "k", value: big(1001) },
    ]),
    EXHAUSTED,
    /mutations\[1\]\.put\.value is 1001 bytes/,
  );
  await fails(
    client.write([
      { type: "put", key: "ok", value: "v" },
      { type: "put", key: big(101), value: "v" },
    ]),
    EXHAUSTED,
    /mutations\[1\]\.put\.key is 101 bytes/,
  );
  // Over the receive limit: refused by grpc-js before a handler runs.
  await fails(client.put("k", big(5000)), EXHAUSTED, /larger than max/i);
  await fails(
    client.write(
      Array.from({ length: 10 }, (_, i) => ({ type: "put", key: `m${i}`, value: big(900) })),
    ),
    EXHAUSTED,
    /larger than max/i,
  );

  // A mutation with no operation cannot be built with KvClient: send the raw message.
  const raw = new Client(server.address, credentials.createInsecure());
  t.after(() => raw.close());
  const request: WriteRequest = {
    $typeName: "kv.v1.WriteRequest",
    mutations: [
      {
        $typeName: "kv.v1.Mutation",
        op: {
          case: "put",
          value: { $typeName: "kv.v1.PutRequest", key: Buffer.from("ok"), value: Buffer.from("v") },
        },
      },
      { $typeName: "kv.v1.Mutation", op: { case: undefined } },
    ],
  };
  const rawError = await new Promise<unknown>((resolve) => {
    const m = kvServiceDefinition.Write;
    raw.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      new Metadata(),
      {},
      (err) => resolve(err),
    );
  });
  const e = rawError as { code?: unknown; details?: unknown } | null;
  assert.equal(e?.code, status.INVALID_ARGUMENT);
  assert.match(String(e?.details), /mutations\[1\] has no operation/);

  assert.equal(store.stats().lastSequence, sequence, "no refused request reached the store");
  const rows = await client.scanAll();
  assert.deepEqual(
    rows.map(([k, v]) => `${k}=${v}`),
    ["existing=value"],
  );
});

test("a corrupt table gives DATA_LOSS", async (t) => {
  const fs = new MemoryFileSystem();
  const writer = await open("/db", { fs });
  for (let i = 0; i < 100; i++) await writer.put(`key${i}`, `value${i}`);
  await writer.flush();
  await writer.close();
  const table = (await fs.list("/db")).find((name) => name.endsWith(".sst"));
  assert.ok(table !== undefined);
  const bytes = fs.readFile(`/db/${table}`).slice();
  bytes[20]! ^= 0x10; // inside the first data block
  fs.writeFile(`/db/${table}`, bytes);

  const store = await open("/db", { fs });
  const { client } = await serve(t, store);
  await fails(client.get("key1"), status.DATA_LOSS, /checksum|corrupt/i);
  await fails(client.scanAll(), status.DATA_LOSS, /checksum|corrupt/i);
  assert.equal(store.stats().openIterators, 0);
});

test("a closed store gives UNAVAILABLE", async (t) => {
  const store = await open("/db", { fs: new MemoryFileSystem() });
  const { client } = await serve(t, store);
  await client.put("a", "1");
  await store.close();
  await fails(client.put("b", "2"), status.UNAVAILABLE, /closed/);
  await fails(client.get("a"), status.UNAVAILABLE, /closed/);
  await fails(client.scanAll(), status.UNAVAILABLE, /closed/);
});

test("a write stalled past its deadline gives DEADLINE_EXCEEDED", async (t) => {
  const fs = new GatedFileSystem(new MemoryFileSystem(), (path) => path.endsWith(".log"));
  const store = await open("/db", { fs, blockingLoneSync: false });
  const { client } = await serve(t, store);
  fs.hold(); // log syncs wait: every durable write stalls
  t.after(() => fs.release());
  await fails(client.put("a", "1", { timeoutMs: 200 }), status.DEADLINE_EXCEEDED, /deadline/i);
  fs.release();
  // The store itself is fine afterwards.
  await client.put("b", "2");
  assert.equal((await client.get("b"))?.toString(), "2");
});

test("a write still queued when its deadline passes is never stored", async (t) => {
  const fs = new GatedFileSystem(new MemoryFileSystem(), (path) => path.endsWith(".log"));
  const store = await open("/db", { fs, blockingLoneSync: false });
  const { client } = await serve(t, store);
  fs.hold();
  t.after(() => fs.release());
  // "a" forms a group and waits in its log sync; "c" queues behind it.
  const first = fails(client.put("a", "1", { timeoutMs: 300 }), status.DEADLINE_EXCEEDED, /./);
  await waitFor(() => fs.waiting > 0, "the first write to reach its log sync");
  await fails(client.put("c", "3", { timeoutMs: 100 }), status.DEADLINE_EXCEEDED, /./);
  await first;
  const sequence = store.stats().lastSequence;
  fs.release();
  await client.put("b", "2");
  // "a" was committed (its group had formed); "c" was dropped from the queue.
  assert.equal((await client.get("a"))?.toString(), "1");
  assert.equal(await client.get("c"), undefined);
  assert.equal(store.stats().lastSequence, sequence + 2, "only a and b took sequence numbers");
});

test("engine error codes map to the documented statuses", () => {
  assert.deepEqual(
    Object.fromEntries(Object.entries(STATUS_OF_KV_ERROR).map(([k, v]) => [k, status[v]])),
    {
      INVALID_ARGUMENT: "INVALID_ARGUMENT",
      CORRUPTION: "DATA_LOSS",
      IO_ERROR: "UNAVAILABLE",
      READ_ONLY: "UNAVAILABLE",
      CLOSED: "UNAVAILABLE",
      LOCKED: "FAILED_PRECONDITION",
      ABORTED: "CANCELLED",
      UNAVAILABLE: "UNAVAILABLE",
      OUTCOME_UNKNOWN: "UNAVAILABLE",
      RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
      FAILED_PRECONDITION: "FAILED_PRECONDITION",
      SESSION_EXPIRED: "FAILED_PRECONDITION",
      COMPACTED: "OUT_OF_RANGE",
      FUTURE_REVISION: "OUT_OF_RANGE",
      NO_SPACE: "RESOURCE_EXHAUSTED",
    },
  );
  assert.equal(statusOf(new KvError("READ_ONLY", "x")).code, status.UNAVAILABLE);
  assert.equal(statusOf(new KvError("NO_SPACE", "x")).code, status.RESOURCE_EXHAUSTED);
  // The engine's code and the leader travel as trailers, so that a client can tell
  // "not proposed" from "outcome unknown" (both UNAVAILABLE).
  assert.deepEqual(statusOf(new KvError("OUTCOME_UNKNOWN", "x")).trailers, [
    ["kv-error", "OUTCOME_UNKNOWN"],
  ]);
  assert.deepEqual(
    statusOf(new KvError("UNAVAILABLE", "x", { leaderHint: "127.0.0.1:7" })).trailers,
    [
      ["kv-error", "UNAVAILABLE"],
      ["kv-leader", "127.0.0.1:7"],
    ],
  );
  assert.equal(statusOf(new TypeError("bug")).code, status.INTERNAL);
});
