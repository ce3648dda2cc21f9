/**
 * End to end against a real `kv-engine serve` process on an ephemeral loopback port:
 * every RPC through the typed client, binary (non-UTF-8) keys and values, empty values,
 * scans with every combination of bounds and limits checked against a model, response
 * batching, and the health and reflection services a tool like grpcurl relies on. Runs
 * on both transports (`--transport lean`, the default, and `--transport grpc-js`).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import { isKvClientError, KvClient, status } from "../../src/client/index.js";
import { TRANSPORTS } from "../../src/server/index.js";
import { type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** A model of the store: hex key -> value, compared in byte order. */
class Model {
  readonly map = new Map<string, Buffer>();
  put(k: Uint8Array, v: Uint8Array) {
    this.map.set(hex(k), Buffer.from(v));
  }
  delete(k: Uint8Array) {
    this.map.delete(hex(k));
  }
  scan(start: Buffer | undefined, end: Buffer | undefined, limit: number): string[] {
    const rows = [...this.map.entries()]
      .map(([k, v]) => [Buffer.from(k, "hex"), v] as const)
      .filter(([k]) => start === undefined || start.length === 0 || Buffer.compare(k, start) >= 0)
      .filter(([k]) => end === undefined || end.length === 0 || Buffer.compare(k, end) < 0)
      .sort(([a], [b]) => Buffer.compare(a, b))
      .map(([k, v]) => `${hex(k)}=${hex(v)}`);
    return limit > 0 ? rows.slice(0, limit) : rows;
  }
}

/** Encodes a protobuf message with string fields (field number -> value). */
function stringFields(fields: Record<number, string>): Buffer {
  const w = new BinaryWriter();
  for (const [no, v] of Object.entries(fields)) w.tag(Number(no), 2).string(v);
  return Buffer.from(w.finish());
}

/** The length-delimited fields of a protobuf message, by field number. */
function lengthDelimited(bytes: Uint8Array): Map<number, Uint8Array[]> {
  const out = new Map<number, Uint8Array[]>();
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (type === 2) out.set(no, [...(out.get(no) ?? []), r.bytes()]);
    else r.skip(type);
  }
  return out;
}

for (const transport of TRANSPORTS) {
  describe(`over ${transport}`, () => {
    const dir = tempDir("kv-e2e-");
    let server: ServerProcess;
    let client: KvClient;

    before(async () => {
      server = await startServer(`${dir.path}/data`, ["--transport", transport]);
      client = new KvClient(server.address, { timeoutMs: 20_000 });
    });

    after(async () => {
      client?.close();
      const code = await server?.stop();
      dir.remove();
      assert.equal(code, 0);
    });

    test("every RPC with binary keys and values, empty values, and absent keys", async () => {
      const k1 = Buffer.from([0xff, 0x00, 0xfe, 0x80]); // not UTF-8
      const v1 = Buffer.from([0x00, 0xc3, 0x28, 0xff, 0x00]);
      await client.put(k1, v1);
      assert.deepEqual(await client.get(k1), v1);

      await client.put("empty", new Uint8Array(0));
      const empty = await client.get("empty");
      assert.ok(empty !== undefined, "an empty value is a value, not absence");
      assert.equal(empty.length, 0);

      assert.equal(await client.get("never-written"), undefined);
      await client.delete(k1);
      assert.equal(await client.get(k1), undefined);
      await client.delete("never-written"); // deleting an absent key is fine

      await client.write([
        { type: "put", key: "w1", value: "one" },
        { type: "put", key: Buffer.from([0x80]), value: Buffer.from([0x81]) },
        { type: "delete", key: "empty" },
        { type: "put", key: "w1", value: "uno" }, // later mutation of the same key wins
      ]);
      assert.equal((await client.get("w1"))?.toString(), "uno");
      assert.deepEqual(await client.get(Buffer.from([0x80])), Buffer.from([0x81]));
      assert.equal(await client.get("empty"), undefined);
      await client.write([]); // an empty batch is a no-op
      for (const k of ["w1", Buffer.from([0x80])]) await client.delete(k);
    });

    test("scans: every combination of bounds and limits matches the model", async () => {
      const model = new Model();
      const keys: Buffer[] = [];
      for (let i = 0; i < 40; i++) {
        // binary keys spread over the byte range, a shared prefix, one empty value
        const key = Buffer.from([0x10 + i * 6, i % 3 === 0 ? 0xff : 0x00, i]);
        const value = i === 7 ? Buffer.alloc(0) : Buffer.from([i, 0xfe, 0x00, i]);
        keys.push(key);
        model.put(key, value);
      }
      await client.write(
        keys.map((key) => ({ type: "put", key, value: model.map.get(hex(key))! })),
      );
      for (const k of keys.filter((_, i) => i % 5 === 2)) {
        await client.delete(k);
        model.delete(k);
      }
      const sorted = [...keys].sort(Buffer.compare);
      const bounds: Array<Buffer | undefined> = [
        undefined,
        Buffer.alloc(0),
        Buffer.from([0x00]), // before every key
        sorted[3]!, // an existing key
        sorted[5]!, // a deleted key (i % 5 === 2 -> ...)
        Buffer.concat([sorted[10]!, Buffer.from([0x00])]), // between keys
        sorted.at(-1)!,
        Buffer.from([0xff, 0xff, 0xff, 0xff]), // after every key
      ];
      let checked = 0;
      for (const start of bounds) {
        for (const end of bounds) {
          for (const limit of [0, 1, 3, 1000]) {
            const inverted =
              start !== undefined &&
              end !== undefined &&
              start.length > 0 &&
              end.length > 0 &&
              Buffer.compare(start, end) > 0;
            if (inverted) {
              await assert.rejects(client.scanAll(start, end, limit), (err) =>
                isKvClientError(err, status.INVALID_ARGUMENT),
              );
              continue;
            }
            const got = (await client.scanAll(start, end, limit)).map(
              ([k, v]) => `${hex(k)}=${hex(v)}`,
            );
            const what = `start=${start && hex(start)} end=${end && hex(end)} limit=${limit}`;
            assert.deepEqual(got, model.scan(start, end, limit), what);
            checked++;
          }
        }
      }
      assert.ok(checked > 150);
      // The async-iterable form yields the same rows, and leaving early is fine.
      const rows: string[] = [];
      for await (const [k] of client.scan()) {
        rows.push(hex(k));
        if (rows.length === 3) break;
      }
      assert.deepEqual(
        rows,
        model.scan(undefined, undefined, 3).map((r) => r.split("=")[0]),
      );
      for (const k of keys) await client.delete(k);
    });

    test("a long scan arrives in several bounded messages, in order, each row once", async () => {
      const value = Buffer.alloc(1000, 0x61);
      const n = 400; // ~400 KB: several 64 KiB messages
      for (let i = 0; i < n; i += 100) {
        await client.write(
          Array.from({ length: 100 }, (_, j) => ({
            type: "put" as const,
            key: `long/${String(i + j).padStart(4, "0")}`,
            value,
          })),
        );
      }
      const batches: number[] = [];
      const seen: string[] = [];
      for await (const batch of client.scanBatches("long/", "long0")) {
        batches.push(batch.reduce((s, [k, v]) => s + k.length + v.length, 0));
        for (const [k] of batch) seen.push(k.toString());
      }
      assert.equal(seen.length, n);
      assert.deepEqual(seen, [...seen].sort());
      assert.ok(batches.length >= 5, `expected several messages, got ${batches.length}`);
      for (const bytes of batches) assert.ok(bytes <= 64 * 1024, `a message holds ${bytes} bytes`);
    });

    test("the health service reports SERVING and reflection lists and describes kv.v1.KvService and the health service", async () => {
      const raw = new Client(server.address, credentials.createInsecure());
      try {
        const health = await new Promise<Buffer>((resolve, reject) => {
          raw.makeUnaryRequest(
            "/grpc.health.v1.Health/Check",
            (b: Buffer) => b,
            (b: Buffer) => b,
            stringFields({ 1: "kv.v1.KvService" }),
            new Metadata(),
            {},
            (err, res) => (err === null && res !== undefined ? resolve(res) : reject(err)),
          );
        });
        assert.deepEqual([...health], [0x08, 0x01], "HealthCheckResponse{status: SERVING}");

        const call = raw.makeBidiStreamRequest(
          "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
          (b: Buffer) => b,
          (b: Buffer) => b,
        );
        const responses: Buffer[] = [];
        const done = new Promise<void>((resolve, reject) => {
          call.on("data", (b: Buffer) => {
            responses.push(b);
            if (responses.length === 3) call.end();
          });
          call.on("end", () => resolve());
          call.on("error", reject);
        });
        call.write(stringFields({ 7: "*" })); // list_services
        call.write(stringFields({ 4: "kv.v1.KvService" })); // file_containing_symbol
        call.write(stringFields({ 4: "grpc.health.v1.Health" })); // what grpcurl asks before a health call
        await done;
        const list = lengthDelimited(responses[0]!).get(6)![0]!; // list_services_response
        const names = (lengthDelimited(list).get(1) ?? []).map((s) =>
          Buffer.from(lengthDelimited(s).get(1)![0]!).toString(),
        );
        assert.ok(names.includes("kv.v1.KvService"), names.join(","));
        assert.ok(names.includes("grpc.health.v1.Health"), names.join(","));
        const healthResponse = lengthDelimited(responses[2]!).get(4)![0]!;
        const healthFile = fromBinary(
          FileDescriptorProtoSchema,
          lengthDelimited(healthResponse).get(1)![0]!,
        );
        assert.equal(healthFile.package, "grpc.health.v1");
        assert.deepEqual(
          healthFile.service.find((s) => s.name === "Health")?.method.map((m) => m.name),
          ["Check", "Watch"],
        );
        const fileResponse = lengthDelimited(responses[1]!).get(4)![0]!; // file_descriptor_response
        const file = fromBinary(
          FileDescriptorProtoSchema,
          lengthDelimited(fileResponse).get(1)![0]!,
        );
        assert.equal(file.package, "kv.v1");
        const service = file.service.find((s) => s.name === "KvService");
        assert.deepEqual(
          service?.method.map((m) => m.name),
          ["Put", "Get", "Delete", "Scan", "Write", "CompareAndSwap", "OpenSession"],
        );
        assert.ok(file.messageType.some((m) => m.name === "ScanRequest"));
      } finally {
        raw.close();
      }
    });
  });
}
