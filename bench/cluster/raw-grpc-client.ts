/**
 * A bare gRPC client over node:http2 for the load processes of the cluster benchmarks: one
 * HTTP/2 session to one endpoint (reopened after it fails), calls with hand-framed
 * messages, the deadline as `grpc-timeout`, no retries. It drives kv-engine and etcd
 * alike (each with its own messages), so that the load generators cost the 2-core machine
 * less than grpc-js's client does (~130-140 µs of CPU per call at 64 in flight, against
 * ~350 for KvClient) and the figures say more about the servers.
 */
import * as http2 from "node:http2";

const { HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_TE } =
  http2.constants;

export class RawGrpcClient {
  private session: http2.ClientHttp2Session | undefined;

  constructor(
    readonly endpoint: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Calls `path` with one request message; resolves to the response's messages (one for a
   * unary call, any number for server streaming) once the status is OK; rejects otherwise.
   */
  call(path: string, request: Uint8Array): Promise<Buffer[]> {
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.connect().request({
          [HTTP2_HEADER_METHOD]: "POST",
          [HTTP2_HEADER_PATH]: path,
          [HTTP2_HEADER_CONTENT_TYPE]: "application/grpc",
          [HTTP2_HEADER_TE]: "trailers",
          "grpc-timeout": `${this.timeoutMs}m`,
        });
      } catch (err) {
        reject(err);
        return;
      }
      const chunks: Buffer[] = [];
      let code: string | undefined;
      let message = "";
      const status = (h: http2.IncomingHttpHeaders) => {
        if (h["grpc-status"] === undefined) return;
        code = String(h["grpc-status"]);
        message = decodeURIComponent(String(h["grpc-message"] ?? ""));
      };
      stream.on("response", status); // a trailers-only answer
      stream.on("trailers", status);
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("error", reject);
      stream.on("close", () => {
        if (code === "0")
          resolve(messages(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
        else reject(new Error(`${path}: grpc-status ${code ?? "(none)"} ${message}`));
      });
      const framed = Buffer.allocUnsafe(5 + request.length);
      framed[0] = 0;
      framed.writeUInt32BE(request.length, 1);
      framed.set(request, 5);
      stream.end(framed);
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }

  private connect(): http2.ClientHttp2Session {
    const open = this.session;
    if (open !== undefined && !open.closed && !open.destroyed) return open;
    const s = http2.connect(`http://${this.endpoint}`);
    // A failed session fails its calls; the next call opens another.
    s.on("error", () => {});
    s.on("close", () => {
      if (this.session === s) this.session = undefined;
    });
    this.session = s;
    return s;
  }
}

/** The gRPC messages of a response body (5-byte prefix each, uncompressed). */
function messages(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const length = body.readUInt32BE(at + 1);
    out.push(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  if (at !== body.length) throw new Error("a response message is cut short");
  return out;
}
