/**
 * While the store refuses writes the server says so, on both transports: a full disk
 * (ENOSPC on the log, fault-injecting file system) answers writes RESOURCE_EXHAUSTED
 * saying the disk is full, health reports NOT_SERVING for kv.v1.KvService (the server's
 * own "" stays SERVING), reads are served; once space is back the store heals and health
 * is SERVING again. EIO answers UNAVAILABLE and stays NOT_SERVING.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import { isKvClientError, KvClient, status } from "../../src/client/index.js";
import { FaultInjectingFileSystem, type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { KvServer, TRANSPORTS } from "../../src/server/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import { waitFor } from "../support/wait-for.js";

const SERVING = 1;
const NOT_SERVING = 2;

/** HealthCheckRequest{service} encoded by hand (field 1, a string). */
function healthRequest(service: string): Buffer {
  const name = Buffer.from(service, "utf8");
  return Buffer.concat([Buffer.of(0x0a, name.length), name]);
}

/** The status a health Check answers for `service`. */
function checkHealth(raw: Client, service: string): Promise<number> {
  return new Promise((resolve, reject) => {
    raw.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (b: Buffer) => b,
      (b: Buffer) => b,
      healthRequest(service),
      new Metadata(),
      {},
      (err, res) => {
        if (err !== null || res === undefined) reject(err);
        else resolve(res.length === 0 ? 0 : res[1]!);
      },
    );
  });
}

// Every append and sync fails while the fault is set, the log's and the no-space
// recovery's probe's alike: the store cannot heal before the test clears the fault (with
// the log's alone the probe heals it within ~100 ms, before grpc-js's 250 ms poll may look).
const failure = (code: string) => (op: FileOp) =>
  op.kind === "append" || op.kind === "datasync" || op.kind === "sync"
    ? Object.assign(new Error(`${code}: injected, ${op.kind} '${op.path}'`), { code })
    : undefined;

for (const transport of TRANSPORTS) {
  describe(`over ${transport}`, () => {
    let fs: FaultInjectingFileSystem;
    let db: KvStore;
    let server: KvServer;
    let client: KvClient;
    let raw: Client;

    before(async () => {
      fs = new FaultInjectingFileSystem(new MemoryFileSystem());
      db = await open("/db", { fs });
      server = await KvServer.start(db, { port: 0, transport });
      client = new KvClient(server.address);
      raw = new Client(server.address, credentials.createInsecure());
    });

    after(async () => {
      raw.close();
      client.close();
      await server.shutdown(0);
      await db.close();
    });

    test("a full disk: RESOURCE_EXHAUSTED, NOT_SERVING, reads served; SERVING again once it heals", async () => {
      await client.put("a", "1");
      assert.equal(await checkHealth(raw, "kv.v1.KvService"), SERVING);
      fs.setInjector(failure("ENOSPC"));
      await assert.rejects(client.put("b", "2"), (err) => {
        assert.ok(isKvClientError(err), String(err));
        assert.equal(err.code, status.RESOURCE_EXHAUSTED);
        assert.match(err.message, /disk is full/);
        return true;
      });
      await assert.rejects(client.put("c", "3"), (err) => {
        assert.ok(isKvClientError(err) && err.code === status.RESOURCE_EXHAUSTED, String(err));
        return true;
      });
      await waitFor(
        async () => (await checkHealth(raw, "kv.v1.KvService")) === NOT_SERVING,
        "NOT_SERVING",
      );
      assert.equal(await checkHealth(raw, ""), SERVING);
      assert.equal((await client.get("a"))?.toString(), "1");
      fs.setInjector(undefined);
      await waitFor(
        async () => (await checkHealth(raw, "kv.v1.KvService")) === SERVING,
        "SERVING again",
      );
      await client.put("d", "4");
      assert.equal((await client.get("d"))?.toString(), "4");
      assert.equal(await client.get("b"), undefined);
    });

    test("EIO: UNAVAILABLE, and NOT_SERVING until the store is reopened", async () => {
      fs.setInjector(failure("EIO"));
      await assert.rejects(client.put("e", "5"), (err) => {
        assert.ok(isKvClientError(err) && err.code === status.UNAVAILABLE, String(err));
        return true;
      });
      fs.setInjector(undefined);
      await waitFor(
        async () => (await checkHealth(raw, "kv.v1.KvService")) === NOT_SERVING,
        "NOT_SERVING",
      );
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(await checkHealth(raw, "kv.v1.KvService"), NOT_SERVING);
      await assert.rejects(client.put("f", "6"), (err) => {
        assert.ok(isKvClientError(err) && err.code === status.UNAVAILABLE, String(err));
        return true;
      });
      assert.equal((await client.get("d"))?.toString(), "4");
    });
  });
}
