/**
 * The client semantics of cluster mode over gRPC, against scripted backends behind real
 * servers (both transports where the server is involved): UNAVAILABLE with the leader's
 * address and the engine code in trailers, the serializable field reaching the store,
 * CompareAndSwap (also against a real single-node store), the deadline margin (the
 * store's own error before the call's deadline), and KvClient's multi-endpoint retries:
 * which failures go to another endpoint and which never do.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import { WriteBatch } from "../../src/batch/write-batch.js";
import { isKvClientError, KvClient, parseEndpoints, status } from "../../src/client/index.js";
import type {
  BackendIterator,
  BackendReadOptions,
  BackendScanOptions,
  BackendWriteOptions,
  CasResult,
  KvBackend,
  StoreStats,
} from "../../src/db/kv-backend.js";
import { open } from "../../src/db/kv-store.js";
import { KvError } from "../../src/errors.js";
import { KvServer, TRANSPORTS } from "../../src/server/index.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

type Step = (options: BackendReadOptions | BackendWriteOptions | undefined) => Promise<unknown>;

/** A backend whose every call runs the next step of its script (default: a value). */
class ScriptedBackend implements KvBackend {
  readonly calls: { method: string; options: BackendReadOptions | undefined }[] = [];
  script: Step[] = [];

  private run(method: string, options: BackendReadOptions | undefined, dflt: unknown) {
    this.calls.push({ method, options });
    const step = this.script.shift();
    return step === undefined ? Promise.resolve(dflt) : step(options);
  }

  batch(): WriteBatch {
    return new WriteBatch();
  }
  put(_k: Uint8Array, _v: Uint8Array, o?: BackendWriteOptions): Promise<void> {
    return this.run("put", o, undefined) as Promise<void>;
  }
  delete(_k: Uint8Array, o?: BackendWriteOptions): Promise<void> {
    return this.run("delete", o, undefined) as Promise<void>;
  }
  write(_b: WriteBatch, o?: BackendWriteOptions): Promise<void> {
    return this.run("write", o, undefined) as Promise<void>;
  }
  compareAndSwap(
    _k: Uint8Array,
    expected: Uint8Array | undefined,
    next: Uint8Array | undefined,
    o?: BackendWriteOptions,
  ): Promise<CasResult> {
    return this.run("compareAndSwap", o, {
      applied: expected === undefined,
      current: next,
    }) as Promise<CasResult>;
  }
  get(_k: Uint8Array, o?: BackendReadOptions): Promise<Uint8Array | undefined> {
    return this.run("get", o, Buffer.from("value")) as Promise<Uint8Array | undefined>;
  }
  iterator(o: BackendScanOptions): BackendIterator {
    this.calls.push({ method: "iterator", options: o });
    return { nextBatch: async () => [], close: () => {} };
  }
  stats(): StoreStats {
    return { backgroundError: undefined } as unknown as StoreStats;
  }
}

const fail = (code: ConstructorParameters<typeof KvError>[0], leaderHint?: string): Step => {
  return () =>
    Promise.reject(
      new KvError(code, `scripted ${code}`, leaderHint === undefined ? {} : { leaderHint }),
    );
};

/** Waits until the call's signal fires, then fails as a replicated store's read does. */
const waitForSignal: Step = (options) =>
  new Promise((_resolve, reject) => {
    const signal = options?.signal;
    assert.ok(signal !== undefined, "the store gets a signal");
    signal.addEventListener("abort", () =>
      reject(new KvError("UNAVAILABLE", "no majority confirmed the read", { leaderHint: "h:1" })),
    );
  });

/** Does not answer (a member that hangs) until the call is gone. */
const hang: Step = (options) =>
  new Promise((_resolve, reject) => {
    options?.signal?.addEventListener("abort", () => reject(new KvError("ABORTED", "gone")));
  });

async function serve(
  t: { after: (fn: () => Promise<void>) => void },
  backend: KvBackend,
  options: Parameters<typeof KvServer.start>[1] = {},
): Promise<KvServer> {
  const server = await KvServer.start(backend, { port: 0, ...options });
  t.after(() => server.shutdown(0));
  return server;
}

for (const transport of TRANSPORTS) {
  describe(`over ${transport}`, () => {
    test("UNAVAILABLE carries the engine code and the leader in trailers; OUTCOME_UNKNOWN differs", async (t) => {
      const b = new ScriptedBackend();
      const server = await serve(t, b, { transport });
      const client = new KvClient(server.address);
      t.after(() => client.close());
      b.script = [
        fail("UNAVAILABLE", "10.0.0.7:2379"),
        fail("OUTCOME_UNKNOWN"),
        fail("UNAVAILABLE"),
      ];
      await assert.rejects(client.put("k", "v"), (err: unknown) => {
        assert.ok(isKvClientError(err, status.UNAVAILABLE));
        assert.equal(err.serverCode, "UNAVAILABLE");
        assert.equal(err.leaderHint, "10.0.0.7:2379");
        assert.equal(err.notProposed, true);
        assert.equal(err.outcomeUnknown, false);
        return true;
      });
      await assert.rejects(client.put("k", "v"), (err: unknown) => {
        assert.ok(isKvClientError(err, status.UNAVAILABLE));
        assert.equal(err.serverCode, "OUTCOME_UNKNOWN");
        assert.equal(err.leaderHint, undefined);
        assert.equal(err.notProposed, false);
        assert.equal(err.outcomeUnknown, true);
        return true;
      });
      // Scan failures carry them too.
      await assert.rejects(
        client.get("k"),
        (err: unknown) => isKvClientError(err) && err.notProposed,
      );
    });

    test("the serializable field reaches the store; absent, reads are linearizable", async (t) => {
      const b = new ScriptedBackend();
      const server = await serve(t, b, { transport });
      const client = new KvClient(server.address);
      t.after(() => client.close());
      await client.get("k");
      await client.get("k", { serializable: true });
      await client.scanAll("a", "z", 0, { serializable: true });
      await client.scanAll();
      const reads = b.calls.map((c) => c.options?.serializable === true);
      assert.deepEqual(reads, [false, true, true, false]);
    });

    test("CompareAndSwap against a real single-node store", async (t) => {
      const store = await open("/db", { fs: new MemoryFileSystem() });
      t.after(() => store.close());
      const server = await serve(t, store, { transport });
      const client = new KvClient(server.address);
      t.after(() => client.close());
      assert.deepEqual(await client.compareAndSwap("c", undefined, "1"), {
        applied: true,
        current: Buffer.from("1"),
      });
      assert.deepEqual(await client.compareAndSwap("c", undefined, "2"), {
        applied: false,
        current: Buffer.from("1"),
      });
      assert.deepEqual(await client.compareAndSwap("c", "0", "2"), {
        applied: false,
        current: Buffer.from("1"),
      });
      assert.deepEqual(await client.compareAndSwap("c", "1", undefined), {
        applied: true,
        current: undefined,
      });
      assert.equal(await client.get("c"), undefined);
      // Concurrent increments: each applies exactly once.
      await client.put("n", "0");
      const bump = async () => {
        for (;;) {
          const now = await client.get("n");
          const r = await client.compareAndSwap("n", now!, String(Number(now) + 1));
          if (r.applied) return;
        }
      };
      await Promise.all(Array.from({ length: 20 }, bump));
      assert.equal((await client.get("n"))?.toString(), "20");
      // A request without its comparison or update is refused and changes nothing.
      await assert.rejects(client.compareAndSwap("", "x", "y"), (err: unknown) =>
        isKvClientError(err, status.INVALID_ARGUMENT),
      );
    });

    test("with a deadline margin the store's own answer arrives before the deadline", async (t) => {
      const b = new ScriptedBackend();
      const server = await serve(t, b, { transport, deadlineMarginMs: 100 });
      const client = new KvClient(server.address);
      t.after(() => client.close());
      b.script = [waitForSignal];
      // 2 s: the margin is then the full 100 ms (a twentieth of the time left, at most 100).
      await assert.rejects(client.get("k", { timeoutMs: 2000 }), (err: unknown) => {
        assert.ok(isKvClientError(err, status.UNAVAILABLE), String(err));
        assert.equal(err.leaderHint, "h:1");
        return true;
      });
      // Without a margin the client sees its own deadline.
      const plain = await serve(t, b, { transport });
      const other = new KvClient(plain.address);
      t.after(() => other.close());
      b.script = [waitForSignal];
      await assert.rejects(other.get("k", { timeoutMs: 300 }), (err: unknown) =>
        isKvClientError(err, status.DEADLINE_EXCEEDED),
      );
    });
  });
}

async function deadAddress(): Promise<string> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

describe("KvClient with several endpoints", () => {
  test("endpoints: a list, a comma list, or one address", () => {
    assert.deepEqual(parseEndpoints("a:1, b:2,,a:1"), ["a:1", "b:2"]);
    assert.deepEqual(parseEndpoints(["a:1", "b:2,c:3"]), ["a:1", "b:2", "c:3"]);
    assert.throws(() => parseEndpoints(" , "), TypeError);
    assert.equal(new KvClient("h:1").address, "h:1");
    assert.deepEqual(new KvClient("h:1,h:2").endpoints, ["h:1", "h:2"]);
  });

  test("reads go to another member on UNAVAILABLE; writes only when not proposed", async (t) => {
    const a = new ScriptedBackend();
    const b = new ScriptedBackend();
    const sa = await serve(t, a);
    const sb = await serve(t, b);
    const client = new KvClient([sa.address, sb.address], { timeoutMs: 5000 });
    t.after(() => client.close());
    // A read: UNAVAILABLE (a member cut off) goes on to the next member.
    a.script = [fail("UNAVAILABLE")];
    assert.equal((await client.get("k"))?.toString(), "value");
    assert.deepEqual(
      [a.calls.length, b.calls.length],
      [1, 1],
      "tried on a, answered by b (which the client now sticks to)",
    );
    // A write not proposed goes on; the next call starts where the last one was answered.
    b.script = [fail("UNAVAILABLE")];
    await client.put("k", "v");
    assert.deepEqual([a.calls.length, b.calls.length], [2, 2]);
    // A write whose outcome is unknown is never retried.
    a.script = [fail("OUTCOME_UNKNOWN")];
    await assert.rejects(
      client.put("k", "v"),
      (err: unknown) => isKvClientError(err) && err.outcomeUnknown,
    );
    assert.deepEqual([a.calls.length, b.calls.length], [3, 2]);
    // Nor a CAS, nor a write refused for what it is.
    a.script = [fail("OUTCOME_UNKNOWN"), fail("RESOURCE_EXHAUSTED"), fail("IO_ERROR")];
    await assert.rejects(client.compareAndSwap("k", undefined, "v"));
    await assert.rejects(client.put("k", "v"), (err: unknown) =>
      isKvClientError(err, status.RESOURCE_EXHAUSTED),
    );
    // IO_ERROR is UNAVAILABLE too, but not "not proposed": a write is not retried...
    await assert.rejects(client.put("k", "v"), (err: unknown) =>
      isKvClientError(err, status.UNAVAILABLE),
    );
    assert.deepEqual([a.calls.length, b.calls.length], [6, 2]);
    // ...while a read is.
    a.script = [fail("IO_ERROR")];
    await client.get("k");
    assert.deepEqual([a.calls.length, b.calls.length], [7, 3]);
  });

  test("a leader hint is followed, even to an address not listed", async (t) => {
    const a = new ScriptedBackend();
    const b = new ScriptedBackend();
    const leader = new ScriptedBackend();
    const sa = await serve(t, a);
    const sb = await serve(t, b);
    const sl = await serve(t, leader);
    const client = new KvClient([sa.address, sb.address], { timeoutMs: 5000 });
    t.after(() => client.close());
    a.script = [fail("UNAVAILABLE", sl.address)];
    await client.put("k", "v");
    assert.deepEqual([a.calls.length, b.calls.length, leader.calls.length], [1, 0, 1]);
  });

  test("a member that is down is skipped for writes too (the call never left)", async (t) => {
    const b = new ScriptedBackend();
    const sb = await serve(t, b);
    const client = new KvClient([await deadAddress(), sb.address], { timeoutMs: 5000 });
    t.after(() => client.close());
    await client.put("k", "v");
    assert.equal(b.calls.length, 1);
  });

  test("a read attempt that hangs gets part of the deadline, then another member answers; a write waits it out", async (t) => {
    const a = new ScriptedBackend();
    const b = new ScriptedBackend();
    const sa = await serve(t, a);
    const sb = await serve(t, b);
    const client = new KvClient([sa.address, sb.address], { timeoutMs: 1000 });
    t.after(() => client.close());
    a.script = [hang];
    assert.equal((await client.get("k"))?.toString(), "value");
    assert.deepEqual([a.calls.length, b.calls.length], [1, 1]);
    const back = new KvClient([sa.address, sb.address], { timeoutMs: 500 });
    t.after(() => back.close());
    a.script = [hang];
    await assert.rejects(back.put("k", "v"), (err: unknown) =>
      isKvClientError(err, status.DEADLINE_EXCEEDED),
    );
    assert.equal(b.calls.length, 1, "the write was not sent to b");
  });

  test("rounds of attempts back off: the pause after each round doubles", async (t) => {
    const a = new ScriptedBackend();
    const b = new ScriptedBackend();
    const sa = await serve(t, a);
    const sb = await serve(t, b);
    const client = new KvClient([sa.address, sb.address], {
      timeoutMs: 10_000,
      maxAttempts: 8,
      retryDelayMs: 100,
    });
    t.after(() => client.close());
    const at: number[] = [];
    const notProposed: Step = (o) => {
      at.push(performance.now());
      return fail("UNAVAILABLE")(o);
    };
    a.script = Array.from({ length: 4 }, () => notProposed);
    b.script = Array.from({ length: 4 }, () => notProposed);
    await assert.rejects(
      client.put("k", "v"),
      (err: unknown) => isKvClientError(err) && err.notProposed,
    );
    assert.equal(at.length, 8, "four rounds of two endpoints");
    // Between rounds (after attempts 2, 4 and 6) at least 100, 200 and 400 ms.
    const pauses = [2, 4, 6].map((i) => at[i]! - at[i - 1]!);
    assert.ok(
      pauses[0]! >= 95 && pauses[1]! >= 195 && pauses[2]! >= 395,
      `pauses ${pauses.join(", ")}`,
    );
  });

  test("a single endpoint keeps today's behaviour: one attempt", async (t) => {
    const a = new ScriptedBackend();
    const sa = await serve(t, a);
    const client = new KvClient(sa.address);
    t.after(() => client.close());
    a.script = [fail("UNAVAILABLE")];
    await assert.rejects(client.get("k"), (err: unknown) =>
      isKvClientError(err, status.UNAVAILABLE),
    );
    assert.equal(a.calls.length, 1);
  });
});
