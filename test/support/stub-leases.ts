/**
 * A stand-in lease table for tests of what is built on leases (until the lease service
 * exists): leases granted here exist for puts (LeaseLookup); `revoke` ends one and deletes
 * its keys, one delete per key (the real lessor deletes them in one revision).
 */
import { create } from "@bufbuild/protobuf";
import type { EtcdKvBackend } from "../../src/etcd/etcd-backend.js";
import type { LeaseLookup } from "../../src/mvcc/requests/index.js";
import {
  DeleteRangeRequestSchema,
  RangeRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";

export class StubLeases implements LeaseLookup {
  private nextId = 0x694d71ddacfda227n;
  /** The live leases and their TTLs. */
  private readonly live = new Map<bigint, number>();

  exists(id: bigint): boolean {
    return this.live.has(id);
  }

  /** Grants lease `id` (or a new ID) of `ttlSeconds` (default 60); its ID. */
  grant(id?: bigint, ttlSeconds = 60): bigint {
    const lease = id ?? this.nextId++;
    this.live.set(lease, ttlSeconds);
    return lease;
  }

  /** The TTL lease `id` was granted with, or undefined when it does not exist. */
  ttl(id: bigint): number | undefined {
    return this.live.get(id);
  }

  /** Ends `id` and deletes every key attached to it. */
  async revoke(kv: EtcdKvBackend, id: bigint): Promise<void> {
    this.live.delete(id);
    const all = await kv.range(
      create(RangeRequestSchema, { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) }),
    );
    for (const k of all.kvs) {
      if (k.lease === id) await kv.deleteRange(create(DeleteRangeRequestSchema, { key: k.key }));
    }
  }
}
