/**
 * etcd's Lock service (v3lockpb.Lock: Lock, Unlock) on the lean gRPC path, over the
 * recipes of src/etcd/recipes (mutex.ts). Every failure is answered as etcd's server
 * answers it: UNKNOWN with etcd's text (toRecipeGrpcError).
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
import { toRecipeGrpcError } from "./etcd-errors.js";
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
    async Lock(req, call) {
      try {
        const held = await lock(backend, req.name, req.lease, { signal: call.signal });
        return create(LockResponseSchema, { header: held.header, key: held.key });
      } catch (err) {
        throw toRecipeGrpcError(err);
      }
    },
    async Unlock(req, call) {
      try {
        validateDeleteRange(create(DeleteRangeRequestSchema, { key: req.key }));
        const r = await unlock(backend, req.key, { signal: call.signal });
        return create(UnlockResponseSchema, { header: r.header });
      } catch (err) {
        throw toRecipeGrpcError(err);
      }
    },
  });
}
