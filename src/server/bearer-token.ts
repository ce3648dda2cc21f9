/**
 * Optional bearer-token check (the grpc-js interceptor here; the lean path calls
 * `bearerRefusal` from its authorize hook). When the server has a token, every call except the health
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

/** True when a call to `path` needs no token. */
export function isOpenPath(path: string): boolean {
  return OPEN_PATHS.some((p) => path.startsWith(p));
}

/** The SHA-256 digest a token is compared by. */
export function tokenDigest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * Why the first `authorization` value (undefined when absent) is not `Bearer <token>` with
 * the token whose digest is `expected`; undefined when it is.
 */
export function bearerRefusal(value: unknown, expected: Buffer): string | undefined {
  if (value === undefined) return "missing authorization metadata (expected 'Bearer <token>')";
  const match = typeof value === "string" ? /^Bearer\s+(.+)$/i.exec(value.trim()) : null;
  if (match === null) return "authorization metadata must be 'Bearer <token>'";
  return timingSafeEqual(tokenDigest(match[1]!), expected) ? undefined : "wrong bearer token";
}

function refusal(metadata: Metadata, expected: Buffer): string | undefined {
  return bearerRefusal(metadata.get("authorization")[0], expected);
}

/** A server interceptor that refuses calls without `Bearer <token>`. */
export function bearerTokenInterceptor(token: string): ServerInterceptor {
  const expected = tokenDigest(token);
  return (method, call) => {
    if (isOpenPath(method.path)) return new ServerInterceptingCall(call);
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
