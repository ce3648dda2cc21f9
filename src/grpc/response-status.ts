/**
 * What a gRPC client reads of a response header block (headers, trailers, or a
 * trailers-only response): the HTTP status, grpc-status and grpc-message (percent-decoded
 * by `percentDecode`), and the other fields that are metadata.
 */
import type { Metadata } from "./metadata.js";

export interface ResponseStatus {
  /** `:status` ("" when absent). */
  http: string;
  /** `grpc-status` (undefined when absent). */
  grpcStatus: string | undefined;
  /** `grpc-message` as sent ("" when absent). */
  grpcMessage: string;
}

/** Fields that are never metadata (besides pseudo-headers and grpc-*). */
const RESERVED = new Set(["content-type", "te", "user-agent", "content-length"]);

/**
 * Reads `fields` (names and values alternating); the fields that are metadata (not
 * pseudo-headers, not reserved, not grpc-* but grpc-status-details-bin) go into `metadata`
 * when given (-bin values base64-decoded; an invalid one is left out).
 */
export function responseStatus(fields: readonly string[], metadata?: Metadata): ResponseStatus {
  const out: ResponseStatus = { http: "", grpcStatus: undefined, grpcMessage: "" };
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name === ":status") out.http = value;
    else if (name === "grpc-status") out.grpcStatus = value;
    else if (name === "grpc-message") out.grpcMessage = value;
    else if (metadata !== undefined && isMetadata(name)) {
      try {
        metadata.add(name, name.endsWith("-bin") ? Buffer.from(value, "base64") : value);
      } catch {
        // Not valid metadata: left out.
      }
    }
  }
  return out;
}

function isMetadata(name: string): boolean {
  if (name[0] === ":" || RESERVED.has(name)) return false;
  return !name.startsWith("grpc-") || name === "grpc-status-details-bin";
}

/** grpc-message as text: percent-decoded, or as sent when it is not valid percent-encoding. */
export function percentDecode(s: string): string {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
