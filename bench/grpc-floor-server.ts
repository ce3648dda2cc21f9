/**
 * The transport floor of the gRPC scenarios: kv.v1.KvService (the same grpc-js service
 * definition and server options as KV Engine's server) over an in-memory Map, with no
 * engine, no durability and no request checks. What a client measures against it is what
 * grpc-js, protobuf and loopback TCP cost; KV Engine's server over the same calls shows
 * what the engine and its service layer add.
 *
 *   node dist/bench/grpc-floor-server.js
 *
 * Listens on 127.0.0.1 (a free port), prints `grpc-floor listening on 127.0.0.1:PORT`
 * once it accepts calls, and exits on SIGTERM or SIGINT. Run by bench/stores/grpc-floor.ts.
 *
 * Scan reads an index of the keys sorted as byte strings, rebuilt on the first scan after
 * a key was added or removed (overwrites keep it), and sends rows in messages of about
 * `scanBatchBytes` (the server's default), waiting for 'drain' when grpc-js asks to.
 */
import { once } from "node:events";
import { Server, ServerCredentials, status } from "@grpc/grpc-js";
import type { KeyValue } from "../src/proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition } from "../src/proto/kv-service-definition.js";
import type { KvServiceHandlers } from "../src/server/kv-service.js";
import { DEFAULT_LIMITS } from "../src/server/limits.js";

interface Entry {
  key: Uint8Array;
  value: Uint8Array;
}

/** Rows by key, the key as a latin1 string (one char per byte: string order = byte order). */
const rows = new Map<string, Entry>();
/** Keys in order, and their entries; undefined once a key was added or removed. */
let index: { ids: string[]; entries: Entry[] } | undefined;

const idOf = (key: Uint8Array): string =>
  Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");

function put(key: Uint8Array, value: Uint8Array): void {
  const id = idOf(key);
  const e = rows.get(id);
  // Copies: the request's bytes may be views of a buffer grpc-js reuses.
  if (e !== undefined) e.value = value.slice();
  else {
    rows.set(id, { key: key.slice(), value: value.slice() });
    index = undefined;
  }
}

function del(key: Uint8Array): void {
  if (rows.delete(idOf(key))) index = undefined;
}

function sortedIndex(): { ids: string[]; entries: Entry[] } {
  if (index === undefined) {
    const ids = [...rows.keys()].sort();
    index = { ids, entries: ids.map((id) => rows.get(id)!) };
  }
  return index;
}

/** The first position in `ids` whose id is >= `id`. */
function lowerBound(ids: readonly string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const EMPTY = new Uint8Array(0);

const handlers: KvServiceHandlers = {
  Put({ request }, callback) {
    put(request.key, request.value);
    callback(null, { $typeName: "kv.v1.PutResponse" });
  },
  Get({ request }, callback) {
    const e = rows.get(idOf(request.key));
    callback(
      null,
      e === undefined
        ? { $typeName: "kv.v1.GetResponse", found: false, value: EMPTY }
        : { $typeName: "kv.v1.GetResponse", found: true, value: e.value },
    );
  },
  Delete({ request }, callback) {
    del(request.key);
    callback(null, { $typeName: "kv.v1.DeleteResponse" });
  },
  Write({ request }, callback) {
    for (const { op } of request.mutations) {
      if (op.case === "put") put(op.value.key, op.value.value);
      else if (op.case === "delete") del(op.value.key);
    }
    callback(null, { $typeName: "kv.v1.WriteResponse" });
  },
  CompareAndSwap({ request }, callback) {
    const e = rows.get(idOf(request.key));
    const expected = request.expected.case === "expectedValue" ? request.expected.value : undefined;
    const same =
      expected === undefined
        ? e === undefined
        : e !== undefined && Buffer.compare(e.value, expected) === 0;
    if (same) {
      if (request.update.case === "newValue") put(request.key, request.update.value);
      else del(request.key);
    }
    const now = rows.get(idOf(request.key));
    callback(null, {
      $typeName: "kv.v1.CompareAndSwapResponse",
      applied: same,
      found: now !== undefined,
      value: now?.value ?? EMPTY,
    });
  },
  OpenSession(_call, callback) {
    callback({ code: status.UNIMPLEMENTED, details: "the floor server keeps no sessions" });
  },
  async Scan(call) {
    const { startKey, endKey, limit } = call.request;
    const { ids, entries } = sortedIndex();
    const end = endKey.length === 0 ? undefined : idOf(endKey);
    const last = limit === 0n ? ids.length : Math.min(ids.length, Number(limit));
    let batch: KeyValue[] = [];
    let bytes = 0;
    let i = startKey.length === 0 ? 0 : lowerBound(ids, idOf(startKey));
    for (let count = 0; i < ids.length && count < last; i++, count++) {
      if (end !== undefined && ids[i]! >= end) break;
      const { key, value } = entries[i]!;
      if (batch.length > 0 && bytes + key.length + value.length > DEFAULT_LIMITS.scanBatchBytes) {
        const more = call.write({ $typeName: "kv.v1.ScanResponse", entries: batch });
        batch = [];
        bytes = 0;
        if (!more) await once(call, "drain");
        if (call.cancelled) return;
      }
      batch.push({ $typeName: "kv.v1.KeyValue", key, value });
      bytes += key.length + value.length;
    }
    if (batch.length > 0) call.write({ $typeName: "kv.v1.ScanResponse", entries: batch });
    call.end();
  },
};

const server = new Server({
  "grpc.max_receive_message_length": DEFAULT_LIMITS.maxReceiveMessageBytes,
  "grpc.max_concurrent_streams": DEFAULT_LIMITS.maxConcurrentStreams,
});
server.addService(kvServiceDefinition, { ...handlers });
const port = await new Promise<number>((resolve, reject) => {
  server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) =>
    err === null ? resolve(p) : reject(err),
  );
});
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    server.forceShutdown();
    process.exit(0);
  });
}
process.stdout.write(`grpc-floor listening on 127.0.0.1:${port}\n`);
