/**
 * The header blocks a gRPC server sends: response headers (":status 200" and the content
 * type), trailers (grpc-status, grpc-message, trailing metadata), and trailers-only
 * responses (both in one block, for a call that ends before any message). The common
 * blocks are encoded once.
 *
 * grpc-message is percent-encoded (gRPC over HTTP/2: the UTF-8 bytes outside 0x20-0x7e,
 * and "%", as %XX).
 */
import { encodeHeaderBlock, HeaderBlockBuilder } from "./http2/hpack-encoder.js";
import type { Metadata } from "./metadata.js";

const CONTENT_TYPE = "application/grpc";
const ACCEPT_ENCODING = "identity";

const RESPONSE_HEADERS = encodeHeaderBlock([
  [":status", "200"],
  ["content-type", CONTENT_TYPE],
  ["grpc-accept-encoding", ACCEPT_ENCODING],
]);
const OK_TRAILERS = encodeHeaderBlock([["grpc-status", "0"]]);

/** The response headers, with `metadata` when given. */
export function responseHeaders(metadata: Metadata | undefined): Buffer {
  if (metadata === undefined || metadata.size === 0) return RESPONSE_HEADERS;
  const b = new HeaderBlockBuilder()
    .add(":status", "200")
    .add("content-type", CONTENT_TYPE)
    .add("grpc-accept-encoding", ACCEPT_ENCODING);
  for (const [name, value] of metadata.toFields()) b.add(name, value);
  return b.finish();
}

/** The status block: trailers, or with `trailersOnly` a whole trailers-only response. */
export function statusBlock(
  code: number,
  message: string,
  trailers: Metadata | undefined,
  trailersOnly: boolean,
): Buffer {
  if (
    code === 0 &&
    message === "" &&
    !trailersOnly &&
    (trailers === undefined || trailers.size === 0)
  ) {
    return OK_TRAILERS;
  }
  const b = new HeaderBlockBuilder();
  if (trailersOnly) b.add(":status", "200").add("content-type", CONTENT_TYPE);
  b.add("grpc-status", String(code));
  if (message !== "") b.add("grpc-message", percentEncode(message));
  if (trailers !== undefined) for (const [name, value] of trailers.toFields()) b.add(name, value);
  return b.finish();
}

/** A response that is not gRPC's (wrong method or content type): an HTTP status, with a gRPC status too. */
export function httpErrorBlock(httpStatus: number, code: number, message: string): Buffer {
  return new HeaderBlockBuilder()
    .add(":status", String(httpStatus))
    .add("content-type", CONTENT_TYPE)
    .add("grpc-status", String(code))
    .add("grpc-message", percentEncode(message))
    .finish();
}

/** Extra fields for an UNIMPLEMENTED compression: the encodings this server takes. */
export function unsupportedEncodingBlock(message: string): Buffer {
  return new HeaderBlockBuilder()
    .add(":status", "200")
    .add("content-type", CONTENT_TYPE)
    .add("grpc-accept-encoding", ACCEPT_ENCODING)
    .add("grpc-status", "12")
    .add("grpc-message", percentEncode(message))
    .finish();
}

export function percentEncode(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
        : String.fromCharCode(byte);
  }
  return out;
}
