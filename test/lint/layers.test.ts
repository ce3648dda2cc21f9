/**
 * Architecture lint: only src/vfs/ (and the CLI) touch the file system, and lower layers
 * never import upper ones. Data flows cli -> server -> db -> version -> (wal, memtable,
 * batch, sstable, iterator) -> key -> util/vfs. The gRPC contract (src/proto: generated
 * messages and the grpc-js service definition) sits at the bottom, beside util; the
 * client (src/client) is a network client: it may use src/proto and src/grpc (its HTTP/2
 * client path) only, never the engine.
 * The Raft core (src/raft, kv-engine/raft) is a library of its own beside the store: it
 * may use only src/wal (record framing), src/vfs, src/util and src/errors.ts. The server
 * (src/server) and the metrics (src/observability) reach the store only through the
 * backend seam, src/db/kv-backend.ts, so that any store offering it can be served. The gRPC
 * transport (src/grpc: HTTP/2, gRPC protocol, health, reflection) knows nothing of the KV
 * service or the store: it may use only src/proto, src/util and src/errors.ts.
 * The package entries that load an implementation once its optional peers are installed
 * (src/entry) sit on top, beside the CLI.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const src = join(root, "src");

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sources(path));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!);
}

/** The layer of each top-level folder; a file may import only layers with a lower rank. */
const RANK: Record<string, number> = {
  vfs: 0,
  util: 0,
  proto: 0,
  "errors.ts": 0,
  key: 1,
  grpc: 1,
  wal: 2,
  memtable: 2,
  batch: 2,
  iterator: 2,
  sstable: 2,
  version: 3,
  raft: 3,
  compaction: 4,
  db: 5,
  // The multi-version store (revisions, history, compaction) over a KvStore.
  mvcc: 5.2,
  // etcd's leases (the replicated lease table and the primary's clock), over the store.
  lease: 5.3,
  // The replicated store: above the store and the Raft core, below the server.
  replication: 5.5,
  "index.ts": 6,
  observability: 6,
  server: 6,
  client: 6,
  level: 6,
  tools: 6,
  // Cluster mode of the server (the peer transport, the cluster service, the wiring):
  // above the server, whose transports and status mapping it uses, below the CLI.
  cluster: 6.5,
  // etcd's v3 API (the services and their request semantics), above the server's
  // transports and the multi-version store, wired by the cluster and the CLI.
  etcd: 6.2,
  cli: 7,
  entry: 7,
};

function layerOf(file: string): string {
  return relative(src, file).split("/")[0]!;
}

test("only src/vfs/ and src/cli/ import node:fs", () => {
  const offenders: string[] = [];
  for (const file of sources(src)) {
    const layer = layerOf(file);
    if (layer === "vfs" || layer === "cli") continue;
    for (const spec of imports(file)) {
      if (/^(node:)?fs(\/promises)?$/.test(spec))
        offenders.push(`${relative(root, file)}: ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("lower layers never import upper layers", () => {
  const offenders: string[] = [];
  for (const file of sources(src)) {
    const from = layerOf(file);
    const fromRank = RANK[from];
    assert.notEqual(fromRank, undefined, `no layer rank for src/${from}`);
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = relative(src, join(file, "..", spec))
        .split("/")[0]!
        .replace(/\.js$/, ".ts");
      const toRank = RANK[target];
      if (target === from) continue;
      assert.notEqual(toRank, undefined, `${relative(root, file)} imports unknown layer ${target}`);
      if (toRank! > fromRank!) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("src/client/ imports nothing of the engine (only src/proto/, and src/grpc/'s transport)", () => {
  const offenders: string[] = [];
  for (const file of sources(join(src, "client"))) {
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = relative(src, join(file, "..", spec)).split("/")[0]!;
      if (target !== "client" && target !== "proto" && target !== "grpc")
        offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("src/raft/ imports only wal, vfs, util and errors.ts (never the store or the server)", () => {
  const allowed = new Set(["raft", "wal", "vfs", "util", "errors.ts"]);
  const offenders: string[] = [];
  for (const file of sources(join(src, "raft"))) {
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = relative(src, join(file, "..", spec))
        .split("/")[0]!
        .replace(/\.js$/, ".ts");
      if (!allowed.has(target)) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("src/server/ and src/observability/ import of src/db/ only the backend seams (kv-backend.ts, admin-backend.ts)", () => {
  const seams = new Set(["db/kv-backend.ts", "db/admin-backend.ts"]);
  const offenders: string[] = [];
  for (const folder of ["server", "observability"]) {
    for (const file of sources(join(src, folder))) {
      for (const spec of imports(file)) {
        if (!spec.startsWith(".")) continue;
        const target = relative(src, join(file, "..", spec)).replace(/\.js$/, ".ts");
        if (target.startsWith("db/") && !seams.has(target)) {
          offenders.push(`${relative(root, file)} -> ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
});

test("src/grpc/ imports only proto, util and errors.ts (never the store or the server)", () => {
  const allowed = new Set(["grpc", "proto", "util", "errors.ts"]);
  const offenders: string[] = [];
  for (const file of sources(join(src, "grpc"))) {
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = relative(src, join(file, "..", spec))
        .split("/")[0]!
        .replace(/\.js$/, ".ts");
      if (!allowed.has(target)) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

/**
 * bench/: lib (measuring and formatting helpers) <- cluster (kv-engine and etcd clusters
 * as child processes, their load clients) <- stores (adapters) <- scenarios <- report
 * (summaries, targets, charts) <- the entry points at bench/ itself (main, worker, micro
 * benchmarks). A folder may import only lower ones (no circle between them).
 */
const BENCH_RANK: Record<string, number> = {
  lib: 0,
  cluster: 1,
  stores: 2,
  scenarios: 3,
  report: 4,
};
const BENCH_TOP = 5;

test("bench/ folders import only lower folders", () => {
  const bench = join(root, "bench");
  /** The folder of a file under bench/ ("" for bench/ itself). */
  const groupOf = (file: string) => {
    const parts = relative(bench, file).split("/");
    return parts.length === 1 ? "" : parts[0]!;
  };
  const rankOf = (group: string) => (group === "" ? BENCH_TOP : BENCH_RANK[group]);
  const offenders: string[] = [];
  for (const file of sources(bench)) {
    const from = groupOf(file);
    const fromRank = rankOf(from);
    assert.notEqual(fromRank, undefined, `no rank for bench/${from}`);
    for (const spec of imports(file)) {
      if (!spec.startsWith(".")) continue;
      const target = join(file, "..", spec);
      if (!target.startsWith(`${bench}/`)) continue;
      const to = groupOf(target);
      if (to === from) continue;
      const toRank = rankOf(to);
      assert.notEqual(toRank, undefined, `${relative(root, file)} imports unknown bench/${to}`);
      if (toRank! >= fromRank!) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});
