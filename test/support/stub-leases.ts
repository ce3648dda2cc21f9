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
  private readonly live = new Set<bigint>();

  exists(id: bigint): boolean {
    return this.live.has(id);
  }

  /** A new lease's ID (or `id`). */
  grant(id?: bigint): bigint {
    const lease = id ?? this.nextId++;
    this.live.add(lease);
    return lease;
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
