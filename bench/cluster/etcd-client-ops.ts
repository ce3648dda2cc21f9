/**
 * The etcd API workloads of ./etcd-ops.ts (put, get, txn) through a whole client library
 * rather than a bare gRPC client, for the `etcd_clients` scenario (issue 31, point 4):
 *
 * - "etcd-client": the product's EtcdClient (src/client/etcd/) on its default, lean
 *   transport;
 * - "etcd-client-grpc-js": the same client on its grpc-js transport;
 * - "etcd3": the `etcd3` npm package (1.1.2, over @grpc/grpc-js), the client Node users of
 *   etcd reach for.
 *
 * The same calls for each: put of a random key; a linearizable get (Range) of one random
 * key; Kubernetes' update, a Txn comparing the key's mod revision with the one this process
 * last saw, then a put, else a get (the revision seen refreshed from the answer either way).
 * One client (one connection) per load process, the deadline of the spec on every call.
 */
import { Etcd3 } from "etcd3";
import { EtcdClient, op } from "../../src/client/index.js";

/** The client libraries these workloads drive. */
export type EtcdLibraryKind = "etcd-client" | "etcd-client-grpc-js" | "etcd3";

export const ETCD_LIBRARIES: readonly EtcdLibraryKind[] = [
  "etcd-client",
  "etcd-client-grpc-js",
  "etcd3",
];

export function isEtcdLibrary(kind: string | undefined): kind is EtcdLibraryKind {
  return (ETCD_LIBRARIES as readonly (string | undefined)[]).includes(kind);
}

export type EtcdLibraryOp = "put" | "get" | "txn";

export function isEtcdLibraryOp(o: string): o is EtcdLibraryOp {
  return o === "put" || o === "get" || o === "txn";
}

/** The workload's draws (load-client.ts). */
export interface LibraryDraw {
  pick: () => number;
  key: (i: number) => Uint8Array;
  value: (n: number) => Uint8Array;
}

/** A call of the workload: resolves with the rows it read (always 0 here). */
type Call = () => Promise<number>;

/** One client of `kind` to `endpoint` and its calls of `o`; `close` closes the client. */
export function libraryOperations(
  kind: EtcdLibraryKind,
  endpoint: string,
  timeoutMs: number,
  o: EtcdLibraryOp,
  d: LibraryDraw,
): { call: Call; close: () => void } {
  let n = 0;
  /** The mod revision this process last saw of each key (txn). */
  const seen = new Map<number, number>();
  if (kind === "etcd3") {
    const c = new Etcd3({
      hosts: `http://${endpoint}`,
      defaultCallOptions: (context) =>
        context.isStream ? {} : { deadline: Date.now() + timeoutMs },
    });
    const buf = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    const calls: Record<EtcdLibraryOp, Call> = {
      put: async () => {
        await c
          .put(buf(d.key(d.pick())))
          .value(buf(d.value(n++)))
          .exec();
        return 0;
      },
      get: async () => {
        await c.get(buf(d.key(d.pick()))).buffer();
        return 0;
      },
      txn: async () => {
        const i = d.pick();
        const key = buf(d.key(i));
        const r = await c
          .if(key, "Mod", "==", seen.get(i) ?? 0)
          .then(c.put(key).value(buf(d.value(n++))))
          .else(c.get(key))
          .commit();
        const read = r.responses[0]?.response_range?.kvs[0]?.mod_revision;
        seen.set(i, Number(r.succeeded ? r.header.revision : (read ?? 0)));
        return 0;
      },
    };
    return { call: calls[o], close: () => c.close() };
  }
  const c = new EtcdClient(endpoint, {
    timeoutMs,
    transport: kind === "etcd-client" ? "lean" : "grpc-js",
  });
  const calls: Record<EtcdLibraryOp, Call> = {
    put: async () => {
      await c.put(d.key(d.pick()), d.value(n++));
      return 0;
    },
    get: async () => {
      await c.get(d.key(d.pick()));
      return 0;
    },
    txn: async () => {
      const i = d.pick();
      const key = d.key(i);
      const r = await c
        .txn()
        .if(key, "mod", "==", seen.get(i) ?? 0)
        .success(op.put(key, d.value(n++)))
        .failure(op.get(key))
        .commit();
      const read = r.responses[0];
      const current = read?.type === "get" ? (read.kvs[0]?.modRevision ?? 0) : 0;
      seen.set(i, r.succeeded ? r.header.revision : current);
      return 0;
    },
  };
  return { call: calls[o], close: () => c.close() };
}
