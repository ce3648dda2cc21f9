/**
 * How the Lock and Election services run a call, as etcd's server does: the `hasleader`
 * metadata (its gRPC interceptor, before the service) fails the call with UNAVAILABLE
 * "etcdserver: no leader" when the member knows no leader; then the recipe runs with the
 * call's cancellation, and whatever it throws is answered as etcd's v3lock and v3election
 * servers answer it (toRecipeGrpcError: UNKNOWN with the text).
 */
import type { ServerCall } from "../grpc/server-call.js";
import type { EtcdCallOptions } from "./etcd-backend.js";
import { EtcdError, toEtcdGrpcError, toRecipeGrpcError } from "./etcd-errors.js";
import type { RecipeBackend } from "./recipes/recipe-backend.js";

export async function recipeCall<T>(
  backend: RecipeBackend,
  call: ServerCall<unknown>,
  run: (options: EtcdCallOptions) => Promise<T>,
): Promise<T> {
  if (call.metadata.get("hasleader")[0] === "true" && !backend.kv.hasLeader())
    throw toEtcdGrpcError(new EtcdError("NO_LEADER"));
  try {
    return await run({ signal: call.signal });
  } catch (err) {
    throw toRecipeGrpcError(err);
  }
}
