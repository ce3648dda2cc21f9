/**
 * What the recipe tests (test/etcd/recipes/) start with: a single node's etcd backend
 * (LocalEtcdBackend over a multi-version store in memory) with its leases, its WatchHub, and the RecipeBackend over them; closed when
 * the test ends. Plus a few readers.
 */
import type { TestContext } from "node:test";
import { create } from "@bufbuild/protobuf";
import { LocalEtcdBackend } from "../../src/etcd/local-backend.js";
import { prefixRangeEnd, type RecipeBackend } from "../../src/etcd/recipes/recipe-backend.js";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import {
  LeaseGrantRequestSchema,
  LeaseRevokeRequestSchema,
  LeaseTimeToLiveRequestSchema,
  RangeRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";

/** The leases the tests use. */
export interface TestLeases {
  /** Grants a lease (`id`, or a new ID) of `ttlSeconds` (default 60); its ID. */
  grant(id?: bigint, ttlSeconds?: number): Promise<bigint>;
  /** Ends lease `id`, deleting its keys. */
  revoke(id: bigint): Promise<void>;
  /** The TTL lease `id` was granted with (undefined: no such lease). */
  grantedTtl(id: bigint): Promise<number | undefined>;
}

export interface RecipeFixture {
  readonly b: RecipeBackend;
  readonly kv: LocalEtcdBackend;
  readonly leases: TestLeases;
  /** The keys under `prefix` (UTF-8), in key order. */
  keys(prefix: string): Promise<string[]>;
}

/**
 * With `sessionLeases` false, the RecipeBackend has no `grantLease` (a member without a
 * Lease service); else a Lock or Campaign with lease 0 is granted one through `leases`.
 */
export async function startRecipes(t: TestContext, sessionLeases = true): Promise<RecipeFixture> {
  const db = await open("/db", { fs: new MemoryFileSystem() });
  const store = await MvccStore.open(db);
  const kv = new LocalEtcdBackend(store);
  const leases: TestLeases = {
    grant: async (id = 0n, ttl = 60) =>
      (await kv.leaseGrant(create(LeaseGrantRequestSchema, { ID: id, TTL: BigInt(ttl) }))).ID,
    revoke: async (id) => {
      await kv.leaseRevoke(create(LeaseRevokeRequestSchema, { ID: id }));
    },
    grantedTtl: async (id) => {
      const r = await kv.leaseTimeToLive(create(LeaseTimeToLiveRequestSchema, { ID: id }));
      return r.TTL < 0n ? undefined : Number(r.grantedTTL);
    },
  };
  const hub = new WatchHub(() => store);
  const ids = { clusterId: 1n, memberId: 2n, raftTerm: 3n };
  const b: RecipeBackend = {
    kv,
    watch: { hub, ids: () => ids },
    ...(sessionLeases ? { grantLease: (ttl) => leases.grant(undefined, ttl) } : {}),
  };
  t.after(async () => {
    kv.close();
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

/** Grants a lease with each ID of `ids` (in order); their IDs. */
export function grantEach<T extends bigint[]>(
  leases: TestLeases,
  ...ids: T
): Promise<{ [K in keyof T]: bigint }> {
  return Promise.all(ids.map((id) => leases.grant(id))) as Promise<{ [K in keyof T]: bigint }>;
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
