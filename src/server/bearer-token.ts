/**
 * Optional bearer-token check. When the server has a token, every call except the health
 * service's must carry the metadata `authorization: Bearer <token>`; a missing or wrong
 * token ends the call with UNAUTHENTICATED before its handler runs. Tokens are compared
 * by their SHA-256 digests in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import {
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptor,
  status,
} from "@grpc/grpc-js";

/** Calls under these path prefixes need no token (load balancers probe health). */
const OPEN_PATHS = ["/grpc.health.v1.Health/"];

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Why `metadata` does not carry `expected` (undefined when it does). */
function refusal(metadata: Metadata, expected: Buffer): string | undefined {
  const values = metadata.get("authorization");
  if (values.length === 0) return "missing authorization metadata (expected 'Bearer <token>')";
  const value = values[0];
  const match = typeof value === "string" ? /^Bearer\s+(.+)$/i.exec(value.trim()) : null;
  if (match === null) return "authorization metadata must be 'Bearer <token>'";
  return timingSafeEqual(digest(match[1]!), expected) ? undefined : "wrong bearer token";
}

/** A server interceptor that refuses calls without `Bearer <token>`. */
export function bearerTokenInterceptor(token: string): ServerInterceptor {
  const expected = digest(token);
  return (method, call) => {
    if (OPEN_PATHS.some((p) => method.path.startsWith(p))) return new ServerInterceptingCall(call);
    return new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, forward) => {
            const why = refusal(metadata, expected);
            if (why === undefined) forward(metadata);
            else call.sendStatus({ code: status.UNAUTHENTICATED, details: why });
          },
        });
      },
    });
  };
}
