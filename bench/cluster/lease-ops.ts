/**
 * The lease and lock workloads of the cluster benchmarks (issue 30, point 8), the same
 * requests for either system (./lease-codec.ts):
 * - lease_churn: LeaseGrant (TTL CHURN_TTL_S), a Put of a random key with the lease,
 *   LeaseRevoke: one operation is the three calls;
 * - lock_one / lock_many: v3lock Lock then Unlock, each call in flight on a lease of its
 *   own (granted on first use, TTL HOLDER_TTL_S, never kept alive: it outlives the run);
 *   lock_one: every call of every process contends for the one lock LOCK_NAME; lock_many:
 *   each call in flight takes a lock no other call takes;
 * - keepalive: one LeaseKeepAlive on a random lease among the process's share of the
 *   leases granted before the window (`leases`), over one bidirectional stream per process
 *   (as clientv3 keeps one stream per client), answers taken in the order sent. A lease
 *   answered with TTL 0 (gone) fails the call.
 */
import type { ClientDuplexStream } from "@grpc/grpc-js";
import {
  decodeLeaseAnswer,
  decodeLockKey,
  encodeLeaseGrant,
  encodeLeaseId,
  encodeLock,
  encodePutWithLease,
  encodeUnlock,
  LEASE_GRANT,
  LEASE_KEEP_ALIVE,
  LEASE_REVOKE,
  LOCK,
  UNLOCK,
} from "./lease-codec.js";

export type LeaseOp = "lease_churn" | "lock_one" | "lock_many" | "keepalive";

export const LEASE_OPS: readonly LeaseOp[] = ["lease_churn", "lock_one", "lock_many", "keepalive"];

export function isLeaseOp(op: string): op is LeaseOp {
  return (LEASE_OPS as readonly string[]).includes(op);
}

export const CHURN_TTL_S = 60;
export const HOLDER_TTL_S = 600;
export const KEEPALIVE_TTL_S = 600;
export const LOCK_NAME = new TextEncoder().encode("bench-lock");

/** A unary gRPC call: the response message of `request` at `path`. */
export type UnaryCall = (path: string, request: Uint8Array) => Promise<Uint8Array>;

export interface LeaseDraw {
  pick: () => number;
  key: (i: number) => Uint8Array;
  value: (n: number) => Uint8Array;
  /** This process's seed (names its independent locks apart from other processes'). */
  seed: number;
}

async function grant(call: UnaryCall, ttl: number): Promise<bigint> {
  const a = decodeLeaseAnswer(await call(LEASE_GRANT, encodeLeaseGrant(ttl)));
  if (a.error !== "" || a.id === 0n) throw new Error(`LeaseGrant: ${a.error || "no ID"}`);
  return a.id;
}

/** Answers of one bidirectional stream, in the order its requests were written. */
class KeepAliveStream {
  private readonly waiting: { resolve: (b: Buffer) => void; reject: (e: Error) => void }[] = [];
  private failed: Error | undefined;

  constructor(private readonly stream: ClientDuplexStream<Buffer, Buffer>) {
    stream.on("data", (b: Buffer) => this.waiting.shift()?.resolve(b));
    const fail = (err: Error) => {
      this.failed ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    stream.on("error", fail);
    stream.on("end", () => fail(new Error("LeaseKeepAlive: the stream ended")));
  }

  keepAlive(id: bigint): Promise<Buffer> {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.stream.write(encodeLeaseId(id));
    });
  }

  close(): void {
    this.stream.cancel();
  }
}

/**
 * The operation `op` over `call` (and, for keepalive, `openStream`, which opens
 * LeaseKeepAlive); `leases` is this process's share for keepalive. The first call of
 * keepalive grants them (the untimed connect call).
 */
export function leaseOperation(
  op: LeaseOp,
  call: UnaryCall,
  d: LeaseDraw,
  leases: number,
  openStream?: (path: string) => ClientDuplexStream<Buffer, Buffer>,
): { call: () => Promise<number>; close: () => void } {
  let n = 0;
  switch (op) {
    case "lease_churn":
      return {
        call: async () => {
          const id = await grant(call, CHURN_TTL_S);
          await call("/etcdserverpb.KV/Put", encodePutWithLease(d.key(d.pick()), d.value(n++), id));
          await call(LEASE_REVOKE, encodeLeaseId(id));
          return 0;
        },
        close: () => {},
      };
    case "lock_one":
    case "lock_many": {
      const free: { lease: bigint; name: Uint8Array }[] = [];
      let made = 0;
      return {
        call: async () => {
          let holder = free.pop();
          if (holder === undefined) {
            const lease = await grant(call, HOLDER_TTL_S);
            const name =
              op === "lock_one"
                ? LOCK_NAME
                : new TextEncoder().encode(`bench-lock-${d.seed}-${made++}`);
            holder = { lease, name };
          }
          try {
            const key = decodeLockKey(await call(LOCK, encodeLock(holder.name, holder.lease)));
            await call(UNLOCK, encodeUnlock(key));
          } finally {
            free.push(holder);
          }
          return 0;
        },
        close: () => {},
      };
    }
    case "keepalive": {
      if (openStream === undefined) throw new Error("keepalive needs a streaming client");
      const ids: bigint[] = [];
      let stream: KeepAliveStream | undefined;
      const setUp = async () => {
        const pending: Promise<bigint>[] = [];
        for (let i = 0; i < leases; i++) {
          pending.push(grant(call, KEEPALIVE_TTL_S));
          if (pending.length === 64) ids.push(...(await Promise.all(pending.splice(0))));
        }
        ids.push(...(await Promise.all(pending)));
        stream = new KeepAliveStream(openStream(LEASE_KEEP_ALIVE));
      };
      let ready: Promise<void> | undefined;
      return {
        call: async () => {
          ready ??= setUp();
          await ready;
          const id = ids[Math.floor(d.pick() % ids.length)]!;
          const a = decodeLeaseAnswer(await stream!.keepAlive(id));
          if (a.ttl <= 0) throw new Error(`LeaseKeepAlive: lease ${id} is gone`);
          return 0;
        },
        close: () => stream?.close(),
      };
    }
  }
}
