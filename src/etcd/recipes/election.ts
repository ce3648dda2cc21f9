/**
 * etcd's election (v3election over clientv3/concurrency's Election): the campaigners of
 * election `name` are the keys `name/<lease in hex>`, their values what each proclaims;
 * the leader is the one with the lowest create revision. A LeaderKey (name, key, create
 * revision, lease) stands for a leadership: Proclaim and Resign act only while the key
 * still has that create revision.
 */
import { create } from "@bufbuild/protobuf";
import {
  DeleteRangeRequestSchema,
  PutRequestSchema,
  RangeRequestSchema,
  type RequestOp,
  type ResponseHeader,
  ResponseHeaderSchema,
  TxnRequestSchema,
  type TxnResponse,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { Event_EventType, type KeyValue } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { EtcdCallOptions } from "../etcd-backend.js";
import { HubWatch } from "./hub-watch.js";
import { sessionLease, waitTurn } from "./mutex.js";
import {
  byCreateRange,
  contenderKey,
  createRevisionIs,
  prefixOf,
  prefixRangeEnd,
  type RecipeBackend,
  RecipeError,
  rangeKvs,
} from "./recipe-backend.js";

/** A leadership (v3election's LeaderKey). */
export interface Leadership {
  readonly name: Uint8Array;
  readonly key: Uint8Array;
  /** The key's create revision. */
  readonly rev: bigint;
  readonly lease: bigint;
}

const EMPTY = new Uint8Array(0);

/**
 * Campaigns in election `name` with `value` for `lease` (0: a session lease of 60 s is
 * granted): puts `name/<lease hex>` (or finds it, proclaiming `value` when it differs),
 * then waits until every older campaigner is gone and checks the key is still there (a
 * lease that expired while waiting: "election: not leader"; etcd does not check). A
 * cancelled wait resigns. Resolves with the first write's header and the leadership.
 */
export async function campaign(
  b: RecipeBackend,
  name: Uint8Array,
  lease: bigint,
  value: Uint8Array,
  options: EtcdCallOptions,
): Promise<{ header: ResponseHeader | undefined; leader: Leadership }> {
  const id = await sessionLease(b, lease, options);
  const prefix = prefixOf(name);
  const key = contenderKey(prefix, id);
  const r = await b.kv.txn(
    create(TxnRequestSchema, {
      compare: [createRevisionIs(key, 0n)],
      success: [{ request: { case: "requestPut", value: { key, value, lease: id } } }],
      failure: [{ request: { case: "requestRange", value: create(RangeRequestSchema, { key }) } }],
    }),
    options,
  );
  let leader: Leadership = { name, key, rev: r.header?.revision ?? 0n, lease: id };
  if (!r.succeeded) {
    const mine = rangeKvs(r.responses[0])[0];
    if (mine === undefined) throw new RecipeError("NOT_LEADER");
    leader = { ...leader, rev: mine.createRevision };
    if (Buffer.compare(mine.value, value) !== 0) {
      try {
        await proclaim(b, leader, value, options);
      } catch (err) {
        await resignQuietly(b, leader);
        throw err;
      }
    }
  }
  await waitTurn(
    b,
    prefix,
    key,
    leader.rev,
    options,
    () => new RecipeError("NOT_LEADER"),
    async () => {
      if (options.signal?.aborted) await resignQuietly(b, leader);
    },
  );
  return { header: r.header, leader };
}

/**
 * Sets the leader's value, if `leader` still holds its key (create revision `rev`);
 * throws "election: not leader" otherwise. An absent key with `rev` 0 is created (as in
 * etcd). Resolves with the txn's header.
 */
export async function proclaim(
  b: RecipeBackend,
  leader: Leadership,
  value: Uint8Array,
  options: EtcdCallOptions,
): Promise<ResponseHeader | undefined> {
  const put = create(PutRequestSchema, { key: leader.key, value, lease: leader.lease });
  const r = await asLeader(b, leader, { case: "requestPut", value: put }, options);
  if (!r.succeeded) throw new RecipeError("NOT_LEADER");
  return r.header;
}

/** Deletes the leader's key if it still has create revision `rev`; the txn's header. */
export async function resign(
  b: RecipeBackend,
  leader: Leadership,
  options: EtcdCallOptions,
): Promise<ResponseHeader | undefined> {
  const del = create(DeleteRangeRequestSchema, { key: leader.key });
  return (await asLeader(b, leader, { case: "requestDeleteRange", value: del }, options)).header;
}

/** The leader's key and value, or "election: no leader". */
export async function leader(
  b: RecipeBackend,
  name: Uint8Array,
  options: EtcdCallOptions,
): Promise<{ header: ResponseHeader | undefined; kv: KeyValue }> {
  const r = await b.kv.range(byCreateRange(prefixOf(name), false), options);
  const kv = r.kvs[0];
  if (kv === undefined) throw new RecipeError("NO_LEADER");
  return { header: r.header, kv };
}

/**
 * Calls `send` with the leader's key and value now (or, with none, once one campaigns),
 * then each time the leader proclaims a new value, and with each next leader once it is
 * gone; until `options.signal` fires (then throws KvError ABORTED) or a read fails.
 * `send` may wait (flow control): the watch keeps what comes meanwhile.
 */
export async function observe(
  b: RecipeBackend,
  name: Uint8Array,
  send: (header: ResponseHeader, kv: KeyValue) => Promise<void>,
  options: EtcdCallOptions,
): Promise<never> {
  const prefix = prefixOf(name);
  for (;;) {
    const r = await b.kv.range(byCreateRange(prefix, false), options);
    let kv = r.kvs[0];
    let rev = r.header?.revision ?? 0n;
    if (kv === undefined) {
      // No leader yet: the first put under the prefix after the read is the leader.
      const w = new HubWatch(b.watch.hub, prefix, prefixRangeEnd(prefix), Number(rev) + 1);
      try {
        while (kv === undefined) {
          const item = await w.next(options);
          if ("compacted" in item) break;
          kv = item.events.find((e) => e.type === Event_EventType.PUT)?.kv;
        }
      } finally {
        w.close();
      }
      if (kv === undefined) continue;
      rev = kv.modRevision;
    }
    await send(header(b, rev), kv);
    const w = new HubWatch(b.watch.hub, kv.key, EMPTY, Number(rev) + 1);
    try {
      for (let gone = false; !gone; ) {
        const item = await w.next(options);
        if ("compacted" in item) break;
        for (const e of item.events) {
          if (e.type === Event_EventType.DELETE || e.kv === undefined) {
            gone = true;
            break;
          }
          await send(header(b, BigInt(item.revision)), e.kv);
        }
      }
    } finally {
      w.close();
    }
  }
}

/** Runs `op` in a Txn if the leader's key still has create revision `rev`. */
function asLeader(
  b: RecipeBackend,
  leader: Leadership,
  op: RequestOp["request"],
  options: EtcdCallOptions,
): Promise<TxnResponse> {
  return b.kv.txn(
    create(TxnRequestSchema, {
      compare: [createRevisionIs(leader.key, leader.rev)],
      success: [{ request: op }],
    }),
    options,
  );
}

function header(b: RecipeBackend, revision: bigint): ResponseHeader {
  return create(ResponseHeaderSchema, { ...b.watch.ids(), revision });
}

async function resignQuietly(b: RecipeBackend, leadership: Leadership): Promise<void> {
  try {
    await resign(b, leadership, {});
  } catch {
    // The key stays until its lease ends, as in etcd.
  }
}
