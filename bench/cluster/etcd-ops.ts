/**
 * The etcd API workloads of the cluster benchmarks, written once over a unary call so
 * that every client (the lean one, grpc-js) sends the same requests to either system:
 * - put: KV.Put of a random key;
 * - get: a linearizable KV.Range of one random key;
 * - scan: a KV.Range of `scanRows` consecutive keys;
 * - txn: Kubernetes' update (a Txn: mod_revision(key) == the revision last seen, then put,
 *   else read the key), each load process remembering the revision it saw per key, so a
 *   conflict (another process wrote it since) fails and refreshes it, as a retry loop
 *   would;
 * - list: Kubernetes' paginated list: a prefix Range with `limit` pages of `scanRows`,
 *   the first at the current revision, the next ones at that revision from the last key +
 *   "\0", until `more` is false. One list is one call of the benchmark, its rows the keys
 *   it returned.
 */
import {
  decodeRange,
  decodeResponseHeader,
  decodeTxnUpdate,
  ETCD_PUT,
  ETCD_RANGE,
  ETCD_TXN,
  encodePut,
  encodeRange,
  encodeTxnUpdate,
} from "./etcd-codec.js";

/** A unary gRPC call: the response message of `request` at `path`. */
export type UnaryCall = (path: string, request: Uint8Array) => Promise<Uint8Array>;

/** What an operation returns: the rows it read. */
export type EtcdCall = () => Promise<number>;

export type EtcdOp = "put" | "get" | "scan" | "txn" | "list";

/** The workload's draws (load-client.ts). */
export interface EtcdDraw {
  pick: () => number;
  scanStart: () => number;
  key: (i: number) => Uint8Array;
  value: (n: number) => Uint8Array;
}

/** The end of the prefix range of `prefix` (its last byte + 1). */
function prefixEnd(prefix: Uint8Array): Uint8Array {
  const end = Uint8Array.from(prefix);
  end[end.length - 1]! += 1;
  return end;
}

const KEY_PREFIX = new TextEncoder().encode("key_");

export function etcdOperations(
  call: UnaryCall,
  d: EtcdDraw,
  scanRows: number,
): Record<EtcdOp, EtcdCall> {
  let n = 0;
  const seen = new Map<number, number>();
  return {
    put: async () => {
      decodeResponseHeader(await call(ETCD_PUT, encodePut(d.key(d.pick()), d.value(n++))));
      return 0;
    },
    get: async () => {
      decodeRange(await call(ETCD_RANGE, encodeRange(d.key(d.pick()), undefined, 0, false)));
      return 0;
    },
    scan: async () => {
      const s = d.scanStart();
      const req = encodeRange(d.key(s), d.key(s + scanRows), scanRows, false);
      return decodeRange(await call(ETCD_RANGE, req)).kvs.length;
    },
    txn: async () => {
      const i = d.pick();
      const r = decodeTxnUpdate(
        await call(ETCD_TXN, encodeTxnUpdate(d.key(i), seen.get(i) ?? 0, d.value(n++))),
      );
      seen.set(i, r.succeeded ? r.revision : r.current);
      return 0;
    },
    list: async () => {
      const end = prefixEnd(KEY_PREFIX);
      let from: Uint8Array = KEY_PREFIX;
      let revision = 0;
      let rows = 0;
      for (;;) {
        const page = decodeRange(
          await call(ETCD_RANGE, encodeRange(from, end, scanRows, false, revision)),
        );
        rows += page.kvs.length;
        revision = page.revision;
        const last = page.kvs[page.kvs.length - 1];
        if (!page.more || last === undefined) return rows;
        from = new Uint8Array(last[0].length + 1);
        from.set(last[0]);
      }
    },
  };
}
