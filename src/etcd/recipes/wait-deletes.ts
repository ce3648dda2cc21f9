/**
 * etcd's waitDeletes (clientv3/concurrency/key.go): waiting until every key under a prefix
 * created at or below a revision is gone, one at a time, newest first: read the newest
 * such key, watch it for its delete, read again.
 */
import type { ResponseHeader } from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { Event_EventType } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { EtcdCallOptions } from "../etcd-backend.js";
import type { WatchHub } from "../watch-hub.js";
import { HubWatch } from "./hub-watch.js";
import { byCreateRange, type RecipeBackend } from "./recipe-backend.js";

const EMPTY = new Uint8Array(0);

/**
 * Resolves with the header of the read that found no key under `prefix` with a create
 * revision at or below `maxCreateRevision` (>= 1). Throws what a read throws, or KvError
 * ABORTED when `options.signal` fires.
 */
export async function waitDeletes(
  b: RecipeBackend,
  prefix: Uint8Array,
  maxCreateRevision: bigint,
  options: EtcdCallOptions,
): Promise<ResponseHeader | undefined> {
  for (;;) {
    const r = await b.kv.range(byCreateRange(prefix, true, maxCreateRevision), options);
    const last = r.kvs[0];
    if (last === undefined) return r.header;
    await waitDelete(b.watch.hub, last.key, Number(r.header?.revision ?? 0n), options);
  }
}

/**
 * Resolves once `key`, which exists at `revision`, is deleted after it (or once its
 * history after `revision` was compacted: the caller reads again). Throws KvError ABORTED
 * when `options.signal` fires.
 */
export async function waitDelete(
  hub: WatchHub,
  key: Uint8Array,
  revision: number,
  options: EtcdCallOptions,
): Promise<void> {
  const w = new HubWatch(hub, key, EMPTY, revision + 1);
  try {
    for (;;) {
      const item = await w.next(options);
      if ("compacted" in item) return;
      if (item.events.some((e) => e.type === Event_EventType.DELETE)) return;
    }
  } finally {
    w.close();
  }
}
