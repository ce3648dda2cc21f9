/**
 * What the recipe tests (test/etcd/recipes/) start with: a single node's etcd backend
 * (LocalEtcdBackend over a multi-version store in memory) with stub leases, its WatchHub,
 * and the RecipeBackend over them; closed when the test ends. Plus a few readers.
 */
import type { TestContext } from "node:test";
import { create } from "@bufbuild/protobuf";
import { LocalEtcdBackend } from "../../src/etcd/local-backend.js";
import { prefixRangeEnd, type RecipeBackend } from "../../src/etcd/recipes/recipe-backend.js";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { RangeRequestSchema } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { StubLeases } from "./stub-leases.js";

export interface RecipeFixture {
  readonly b: RecipeBackend;
  readonly kv: LocalEtcdBackend;
  readonly leases: StubLeases;
  /** The keys under `prefix` (UTF-8), in key order. */
  keys(prefix: string): Promise<string[]>;
}

export async function startRecipes(
  t: TestContext,
  grantLease?: RecipeBackend["grantLease"],
): Promise<RecipeFixture> {
  const db = await open("/db", { fs: new MemoryFileSystem() });
  const store = await MvccStore.open(db);
  const leases = new StubLeases();
  const kv = new LocalEtcdBackend(store, { leases });
  const hub = new WatchHub(() => store);
  const ids = { clusterId: 1n, memberId: 2n, raftTerm: 3n };
  const b: RecipeBackend = {
    kv,
    watch: { hub, ids: () => ids },
    ...(grantLease === undefined ? {} : { grantLease }),
  };
  t.after(async () => {
    hub.close();
    await store.close();
    await db.close();
  });
  return {
    b,
    kv,
    leases,
    async keys(prefix) {
      const key = Buffer.from(prefix);
      const r = await kv.range(create(RangeRequestSchema, { key, rangeEnd: prefixRangeEnd(key) }));
      return r.kvs.map((k) => Buffer.from(k.key).toString());
    },
  };
}

/** Resolves true iff `p` settled within `ms` (it keeps running otherwise). */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await new Promise((r) => setTimeout(r, ms));
  return settled;
}

export const bytes = (s: string): Uint8Array => Buffer.from(s);
export const text = (u: Uint8Array | undefined): string => Buffer.from(u ?? []).toString();
