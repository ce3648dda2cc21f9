/**
 * etcd's Lock service (v3lockpb.Lock: Lock, Unlock) on the lean gRPC path, over the
 * recipes of src/etcd/recipes (mutex.ts), each call run by recipeCall (the `hasleader`
 * metadata; failures answered UNKNOWN with etcd's text, as etcd's server answers them).
 */
import { create } from "@bufbuild/protobuf";
import type { GrpcServer } from "../grpc/grpc-server.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import { validateDeleteRange } from "../mvcc/requests/index.js";
import { DeleteRangeRequestSchema } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  file_etcd_api_v3lockpb_v3lock,
  Lock,
  LockRequestSchema,
  LockResponseSchema,
  UnlockRequestSchema,
  UnlockResponseSchema,
} from "../proto/gen/etcd/api/v3lockpb/v3lock_pb.js";
import { recipeCall } from "./recipe-call.js";
import { lock, unlock } from "./recipes/mutex.js";
import type { RecipeBackend } from "./recipes/recipe-backend.js";

/** "v3lockpb.Lock". */
export const ETCD_LOCK_SERVICE_NAME = Lock.typeName;

/** v3lockpb.Lock for the lean path. */
export const etcdLockService = {
  name: ETCD_LOCK_SERVICE_NAME,
  file: file_etcd_api_v3lockpb_v3lock,
  methods: {
    Lock: protobufMethod(
      ETCD_LOCK_SERVICE_NAME,
      "Lock",
      "unary",
      LockRequestSchema,
      LockResponseSchema,
    ),
    Unlock: protobufMethod(
      ETCD_LOCK_SERVICE_NAME,
      "Unlock",
      "unary",
      UnlockRequestSchema,
      UnlockResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

/** Registers v3lockpb.Lock over `backend` on `server` (behind its token and TLS). */
export function registerEtcdLock(
  server: Pick<GrpcServer, "addService">,
  backend: RecipeBackend,
): void {
  server.addService(etcdLockService, {
    Lock: (req, call) =>
      recipeCall(backend, call, async (o) => {
        const held = await lock(backend, req.name, req.lease, o);
        return create(LockResponseSchema, { header: held.header, key: held.key });
      }),
    Unlock: (req, call) =>
      recipeCall(backend, call, async (o) => {
        validateDeleteRange(create(DeleteRangeRequestSchema, { key: req.key }));
        const r = await unlock(backend, req.key, o);
        return create(UnlockResponseSchema, { header: r.header });
      }),
  });
}
