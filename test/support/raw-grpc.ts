/**
 * Raw gRPC calls over a node:http2 client session, for conformance tests that need to
 * send what a gRPC library would not (a wrong content type, no te, a compressed flag, two
 * messages to a unary method) or look at what a library hides (HTTP status, trailers-only
 * responses, RST_STREAM codes).
 */
import * as http2 from "node:http2";

export interface RawResponse {
  /** :status of the response headers. */
  httpStatus: number | undefined;
  headers: http2.IncomingHttpHeaders;
  /** Trailers, or the headers of a trailers-only response. */
  trailers: http2.IncomingHttpHeaders;
  /** grpc-status from the trailers (or a trailers-only response). */
  grpcStatus: number | undefined;
  grpcMessage: string | undefined;
  /** The response messages (5-byte prefixes removed). */
  messages: Buffer[];
  /** RST_STREAM code when the stream was reset. */
  rstCode: number;
}

/** A gRPC message: the 5-byte prefix (flag 0 unless `compressed`) and `payload`. */
export function frame(payload: Uint8Array, compressed = false): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

export function splitMessages(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const n = body.readUInt32BE(at + 1);
    out.push(body.subarray(at + 5, at + 5 + n));
    at += 5 + n;
  }
  return out;
}

export const GRPC_HEADERS = {
  ":method": "POST",
  "content-type": "application/grpc",
  te: "trailers",
};

/**
 * One request on `session`: `headers` (":path" needed; merged over GRPC_HEADERS unless
 * `plain`), then `body` pieces written in order, then END_STREAM unless `keepOpen`.
 */
export function rawCall(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body: Buffer[],
  options: { plain?: boolean; keepOpen?: boolean; timeoutMs?: number } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = session.request(options.plain ? headers : { ...GRPC_HEADERS, ...headers });
    const timer = setTimeout(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      reject(new Error("raw call timed out"));
    }, options.timeoutMs ?? 10_000);
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      responseHeaders = h;
      if (h["grpc-status"] !== undefined) trailers = h;
    });
    req.on("trailers", (t) => {
      trailers = t;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => {});
    req.on("close", () => {
      clearTimeout(timer);
      const status = trailers["grpc-status"];
      const message = trailers["grpc-message"];
      resolve({
        httpStatus:
          responseHeaders[":status"] === undefined ? undefined : Number(responseHeaders[":status"]),
        headers: responseHeaders,
        trailers,
        grpcStatus: status === undefined ? undefined : Number(status),
        grpcMessage: typeof message === "string" ? decodeURIComponent(message) : undefined,
        messages: splitMessages(Buffer.concat(chunks)),
        rstCode: req.rstCode ?? 0,
      });
    });
    for (const piece of body) req.write(piece);
    if (!options.keepOpen) req.end();
  });
}
