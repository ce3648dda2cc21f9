/**
 * The server serves any KvBackend (src/db/kv-backend.ts), not only the local store: here a
 * map in memory, written against the interface alone, behind the real server and client.
 * Every RPC reaches the backend through the seam's calls, with the call's cancellation
 * signal on writes, and the backend's KvErrors come back as their gRPC statuses.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { decodeBatch, WriteBatch } from "../../src/batch/write-batch.js";
import { isKvClientError, KvClient, status } from "../../src/client/index.js";
import type {
  BackendEntry,
  BackendIterator,
  BackendScanOptions,
  BackendWriteOptions,
  CasResult,
  KvBackend,
  StoreStats,
} from "../../src/db/kv-backend.js";
import { KvError } from "../../src/errors.js";
import { KIND_PUT } from "../../src/key/internal-key.js";
import { KvServer } from "../../src/server/index.js";

const key = (b: Uint8Array) => Buffer.from(b).toString("latin1");

/** A backend over a sorted map; refuses writes once `readOnly` is set. */
class MapBackend implements KvBackend {
  readonly map = new Map<string, Uint8Array>();
  readonly calls: string[] = [];
  readOnly = false;

  batch(): WriteBatch {
    return new WriteBatch();
  }

  async put(k: Uint8Array, v: Uint8Array, options?: BackendWriteOptions): Promise<void> {
    this.admit("put", options);
    this.map.set(key(k), Uint8Array.from(v));
  }

  async delete(k: Uint8Array, options?: BackendWriteOptions): Promise<void> {
    this.admit("delete", options);
    this.map.delete(key(k));
  }

  async write(batch: WriteBatch, options?: BackendWriteOptions): Promise<void> {
    this.admit("write", options);
    decodeBatch(batch.encode(), (_seq, kind, k, v) => {
      if (kind === KIND_PUT) this.map.set(key(k), Uint8Array.from(v));
      else this.map.delete(key(k));
    });
  }

  async compareAndSwap(
    k: Uint8Array,
    expected: Uint8Array | undefined,
    next: Uint8Array | undefined,
    options?: BackendWriteOptions,
  ): Promise<CasResult> {
    this.admit("compareAndSwap", options);
    const current = this.map.get(key(k));
    const same =
      current === undefined || expected === undefined
        ? current === expected
        : Buffer.compare(current, expected) === 0;
    if (!same) return { applied: false, current };
    if (next === undefined) this.map.delete(key(k));
    else this.map.set(key(k), Uint8Array.from(next));
    return { applied: true, current: next };
  }

  async get(k: Uint8Array): Promise<Uint8Array | undefined> {
    this.calls.push("get");
    return this.map.get(key(k));
  }

  iterator(options: BackendScanOptions): BackendIterator {
    this.calls.push("iterator");
    const lo = options.gte === undefined ? undefined : key(options.gte);
    const hi = options.lt === undefined ? undefined : key(options.lt);
    // One consistent state: the rows as of the iterator's creation.
    let rows: BackendEntry[] = [...this.map.entries()]
      .filter(([k]) => (lo === undefined || k >= lo) && (hi === undefined || k < hi))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, options.limit ?? Number.POSITIVE_INFINITY)
      .map(([k, v]) => [Buffer.from(k, "latin1"), v] as const);
    return {
      nextBatch: async (n) => {
        const out = rows.slice(0, n);
        rows = rows.slice(n);
        return out;
      },
      close: () => {
        rows = [];
      },
    };
  }

  /** The server reads only `backgroundError` (the health of kv.v1.KvService follows it). */
  stats(): StoreStats {
    const backgroundError = this.readOnly ? "this backend refuses writes" : undefined;
    return { backgroundError } as StoreStats;
  }

  private admit(call: string, options: BackendWriteOptions | undefined): void {
    this.calls.push(call);
    assert.ok(options?.signal !== undefined, `${call} carries the call's cancellation signal`);
    if (this.readOnly) throw new KvError("READ_ONLY", "this backend refuses writes");
  }
}

let backend: MapBackend;
let server: KvServer;
let client: KvClient;

before(async () => {
  backend = new MapBackend();
  server = await KvServer.start(backend, { port: 0 });
  client = new KvClient(server.address);
});

after(async () => {
  client.close();
  await server.shutdown(0);
});

test("every RPC reaches the backend through the seam", async () => {
  await client.put("b", "2");
  await client.write([
    { type: "put", key: "a", value: "1" },
    { type: "put", key: "c", value: "3" },
    { type: "delete", key: "b" },
  ]);
  await client.put("d", "4");
  await client.delete("d");
  assert.equal((await client.get("a"))?.toString(), "1");
  assert.equal(await client.get("b"), undefined);
  const rows = await client.scanAll("a", "z");
  assert.deepEqual(
    rows.map(([k, v]) => `${k}=${v}`),
    ["a=1", "c=3"],
  );
  assert.deepEqual(
    (await client.scanAll(undefined, undefined, 1)).map(([k]) => k.toString()),
    ["a"],
  );
  assert.deepEqual(backend.calls, [
    "put",
    "write",
    "put",
    "delete",
    "get",
    "get",
    "iterator",
    "iterator",
  ]);
});

test("the backend's errors reach the client as their gRPC status", async () => {
  backend.readOnly = true;
  try {
    await assert.rejects(client.put("x", "1"), (err) => {
      assert.ok(isKvClientError(err));
      assert.equal(err.code, status.UNAVAILABLE);
      return true;
    });
  } finally {
    backend.readOnly = false;
  }
  assert.equal(backend.map.has("x"), false);
});
