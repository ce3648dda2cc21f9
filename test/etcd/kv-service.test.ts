/**
 * etcdserverpb.KV's own steps around the backend: the hasleader metadata, the API
 * layer's checks and the request size limits before the backend is called, the bearer
 * token, the error table, the flags.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { EtcdKvBackend } from "../../src/etcd/etcd-backend.js";
import { ETCD_ERRORS, EtcdError, etcdStatusOf } from "../../src/etcd/etcd-errors.js";
import { etcdFlagValues } from "../../src/etcd/etcd-flags.js";
import { registerEtcdKv } from "../../src/etcd/kv-service.js";
import { LocalEtcdBackend } from "../../src/etcd/local-backend.js";
import { KvError, MemoryFileSystem, open } from "../../src/index.js";
import { RequestError } from "../../src/mvcc/requests/request-error.js";
import { ResponseHeaderSchema } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { KvServer } from "../../src/server/index.js";
import { EtcdGrpcClient, isServiceError } from "../support/etcd-grpc-client.js";
import { MvccModel } from "../support/mvcc-model.js";

/** A LocalEtcdBackend that counts calls and can lose its leader. */
class Probe extends LocalEtcdBackend {
  calls = 0;
  leader = true;
  override hasLeader(): boolean {
    return this.leader;
  }
  override put(req: Parameters<EtcdKvBackend["put"]>[0]) {
    this.calls++;
    return super.put(req);
  }
  override txn(req: Parameters<EtcdKvBackend["txn"]>[0]) {
    this.calls++;
    return super.txn(req);
  }
}

async function serve(
  options: { token?: string; maxRequestBytes?: number; maxTxnOps?: number } = {},
) {
  const backend = new Probe(new MvccModel(), {
    ids: { clusterId: 7n, memberId: 8n, raftTerm: 9n },
  });
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const server = await KvServer.start(kv, {
    port: 0,
    ...(options.token === undefined ? {} : { authToken: options.token }),
    registerServices: (s) => registerEtcdKv(s, backend, options),
  });
  return {
    backend,
    address: server.address,
    async stop() {
      await server.shutdown(0);
      await kv.close();
    },
  };
}

async function fails(
  call: Promise<unknown>,
  code: number,
  message: string | RegExp,
): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(isServiceError(err), String(err));
    assert.equal(err.code, code, err.details);
    if (typeof message === "string") assert.equal(err.details, message);
    else assert.match(err.details, message);
    return true;
  });
}

const b = (s: string) => Buffer.from(s);

test("kv service: the header's ids come from the backend; the revision is the request's", async (t) => {
  const s = await serve();
  t.after(() => s.stop());
  const c = new EtcdGrpcClient(s.address);
  t.after(() => c.close());
  const put = await c.put({ key: b("k"), value: b("v") });
  assert.deepEqual(
    put.header,
    create(ResponseHeaderSchema, { clusterId: 7n, memberId: 8n, revision: 2n, raftTerm: 9n }),
  );
});

test("kv service: hasleader fails with etcd's no leader when the backend knows none", async (t) => {
  const s = await serve();
  t.after(() => s.stop());
  const c = new EtcdGrpcClient(s.address);
  t.after(() => c.close());
  s.backend.leader = false;
  await fails(
    c.put({ key: b("k") }, { hasleader: "true" }),
    status.UNAVAILABLE,
    "etcdserver: no leader",
  );
  await fails(
    c.range({ key: b("k") }, { hasleader: "true" }),
    status.UNAVAILABLE,
    "etcdserver: no leader",
  );
  assert.equal(s.backend.calls, 0);
  // Without the metadata the call is served.
  await c.put({ key: b("k") });
  assert.equal(s.backend.calls, 1);
});

test("kv service: checks and size limits before the backend; etcd's texts", async (t) => {
  const s = await serve({ maxRequestBytes: 1000, maxTxnOps: 2 });
  t.after(() => s.stop());
  const c = new EtcdGrpcClient(s.address);
  t.after(() => c.close());
  await fails(c.put({ value: b("v") }), status.INVALID_ARGUMENT, "etcdserver: key is not provided");
  await fails(
    c.put({ key: b("k"), value: b("v"), ignoreValue: true }),
    status.INVALID_ARGUMENT,
    "etcdserver: value is provided",
  );
  const put = (key: string) => ({
    request: { case: "requestPut" as const, value: { key: b(key) } },
  });
  await fails(
    c.txn({ success: [put("a"), put("b"), put("c")] }),
    status.INVALID_ARGUMENT,
    "etcdserver: too many operations in txn request",
  );
  await fails(
    c.txn({ success: [put("a"), put("a")] }),
    status.INVALID_ARGUMENT,
    "etcdserver: duplicate key given in txn request",
  );
  await fails(
    c.put({ key: b("k"), value: Buffer.alloc(1001) }),
    status.INVALID_ARGUMENT,
    "etcdserver: request is too large",
  );
  await fails(
    c.put({ key: b("k"), value: Buffer.alloc(1000 + 512 * 1024) }),
    status.RESOURCE_EXHAUSTED,
    /^grpc: received message larger than max \(\d+ vs\. 525288\)$/,
  );
  assert.equal(s.backend.calls, 0);
  // A read-only txn is not proposed in etcd: no request size limit.
  const range = {
    request: { case: "requestRange" as const, value: { key: Buffer.alloc(1200, 97) } },
  };
  const r = await c.txn({ success: [range] });
  assert.equal(r.succeeded, true);
  await c.range({ key: Buffer.alloc(1200, 97) });
});

test("kv service: behind the server's bearer token", async (t) => {
  const s = await serve({ token: "secret" });
  t.after(() => s.stop());
  const anonymous = new EtcdGrpcClient(s.address);
  const known = new EtcdGrpcClient(s.address, { authorization: "Bearer secret" });
  t.after(() => {
    anonymous.close();
    known.close();
  });
  await fails(anonymous.range({ key: b("k") }), status.UNAUTHENTICATED, /authorization/);
  assert.equal((await known.range({ key: b("k") })).count, 0n);
});

test("etcd errors: request errors, store errors and EtcdError map to etcd's status and text", () => {
  assert.deepEqual(etcdStatusOf(new RequestError("LEASE_NOT_FOUND")), ETCD_ERRORS.LEASE_NOT_FOUND);
  assert.equal(ETCD_ERRORS.LEASE_NOT_FOUND.code, status.NOT_FOUND);
  assert.deepEqual(etcdStatusOf(new KvError("COMPACTED", "x")), {
    code: status.OUT_OF_RANGE,
    message: "etcdserver: mvcc: required revision has been compacted",
  });
  assert.deepEqual(etcdStatusOf(new KvError("OUTCOME_UNKNOWN", "x")), ETCD_ERRORS.TIMEOUT);
  assert.deepEqual(etcdStatusOf(new EtcdError("LEADER_CHANGED")), {
    code: status.UNAVAILABLE,
    message: "etcdserver: leader changed",
  });
  assert.deepEqual(etcdStatusOf(new KvError("IO_ERROR", "disk gone")), {
    code: status.UNKNOWN,
    message: "disk gone",
  });
});

test("etcd flags: --max-request-bytes and --max-txn-ops, positive integers", () => {
  assert.deepEqual(etcdFlagValues({}), {});
  assert.deepEqual(etcdFlagValues({ "max-request-bytes": "2048", "max-txn-ops": "16" }), {
    maxRequestBytes: 2048,
    maxTxnOps: 16,
  });
  assert.throws(
    () => etcdFlagValues({ "max-txn-ops": "0" }),
    /--max-txn-ops must be a positive integer, got '0'/,
  );
  assert.throws(() => etcdFlagValues({ "max-request-bytes": "1.5" }), RangeError);
});
