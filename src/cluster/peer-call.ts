/**
 * The client side of the peer service's calls: dialling a peer (plaintext or TLS, mutual
 * when a certificate is given; one TLS rule for every connection), and, on node:http2, a
 * session for the calls that are not latency-bound (snapshot streams, unary calls such as
 * Discover): opening a gRPC call, reading its status, a unary call. The Raft message
 * stream (PeerLink) speaks HTTP/2 itself over `dialSocket` (src/grpc/http2/
 * client-stream.ts; docs/cluster.md, "Peer transport").
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tlsSocket from "node:tls";
import { frameMessage, MessageDeframer } from "../grpc/message-framing.js";
import { Status, statusName } from "../grpc/status.js";

/** PEM contents of a member's peer TLS identity and the CA its peers' certificates chain to. */
export interface PeerTlsOptions {
  /** This member's certificate chain: served on the peer port and shown when dialling. */
  cert: string | Uint8Array;
  key: string | Uint8Array;
  /** The CA that signs the members' certificates (servers are checked against it). */
  ca: string | Uint8Array;
  /** Refuse peers that present no certificate signed by `ca` (mutual TLS). Default true. */
  clientCertAuth?: boolean;
  /** The name checked in a peer's certificate (default: the host dialled). */
  serverName?: string;
}

export function pem(v: string | Uint8Array): Buffer {
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

/** A socket dialled to a peer, and the event after which it is established. */
export interface PeerSocket {
  readonly socket: net.Socket;
  /** "connect" for plaintext; "secureConnect" (the TLS handshake done) for TLS. */
  readonly readyEvent: "connect" | "secureConnect";
  readonly scheme: "http" | "https";
}

/**
 * Dials `address` (`host:port`): plaintext, or TLS with ALPN "h2", checked against the
 * CA, showing this member's certificate, and the server name `serverName` or else the host
 * dialled (none for an IP address). Errors come as socket events. Nagle's algorithm is
 * off: Raft messages are small and latency-bound, and with the peer's delayed ACK Nagle
 * would hold an append or its acknowledgement for tens of milliseconds.
 */
export function dialSocket(address: string, tls: PeerTlsOptions | undefined): PeerSocket {
  const { host, port } = splitAddress(address);
  if (tls === undefined) {
    return {
      socket: net.connect({ host, port, noDelay: true }),
      readyEvent: "connect",
      scheme: "http",
    };
  }
  const socket = tlsSocket.connect({
    host,
    port,
    ca: pem(tls.ca),
    cert: pem(tls.cert),
    key: pem(tls.key),
    ALPNProtocols: ["h2"],
    servername: tls.serverName ?? (net.isIP(host) === 0 ? host : ""),
  });
  socket.setNoDelay(true);
  return { socket, readyEvent: "secureConnect", scheme: "https" };
}

/** Opens a node:http2 session to `address` over `dialSocket`. Errors come as session events. */
export function dial(address: string, tls: PeerTlsOptions | undefined): http2.ClientHttp2Session {
  const scheme = tls === undefined ? "http" : "https";
  return http2.connect(`${scheme}://${address}`, {
    createConnection: () => dialSocket(address, tls).socket,
  });
}

function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  return { host, port: Number(address.slice(colon + 1)) };
}

/** The final status of a call. */
export interface PeerCallStatus {
  readonly code: number;
  readonly message: string;
}

export class PeerCallError extends Error {
  override readonly name = "PeerCallError";
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(`${statusName(code)}: ${details}`);
  }
}

/** Opens a call of `path` on `session` (the caller writes framed messages and ends it). */
export function openCall(
  session: http2.ClientHttp2Session,
  path: string,
  timeoutMs?: number,
): http2.ClientHttp2Stream {
  const headers: http2.OutgoingHttpHeaders = {
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  };
  if (timeoutMs !== undefined) headers["grpc-timeout"] = `${Math.max(1, Math.ceil(timeoutMs))}m`;
  return session.request(headers, { endStream: false });
}

function decodeMessageText(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(",") : (v ?? "");
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Resolves with the call's status (from trailers, or from a trailers-only response), or
 * UNAVAILABLE when the stream closes without one (reset, connection lost). Also collects
 * the response messages (`onMessage`). Never rejects.
 */
export function callStatus(
  stream: http2.ClientHttp2Stream,
  onMessage?: (message: Buffer) => void,
  maxBytes = 16 * 1024 * 1024,
): Promise<PeerCallStatus> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (s: PeerCallStatus) => {
      if (done) return;
      done = true;
      resolve(s);
    };
    const fromHeaders = (h: http2.IncomingHttpHeaders): boolean => {
      const code = h["grpc-status"];
      if (code === undefined) return false;
      finish({ code: Number(code), message: decodeMessageText(h["grpc-message"]) });
      return true;
    };
    const deframer = new MessageDeframer(maxBytes);
    stream.on("response", (h) => {
      if (fromHeaders(h)) return;
      const http = Number(h[":status"]);
      if (http !== 200) finish({ code: Status.UNKNOWN, message: `HTTP status ${http}` });
    });
    stream.on("data", (chunk: Buffer) => {
      const err = deframer.push(chunk, (m) => onMessage?.(m));
      if (err !== undefined) {
        finish({ code: Status.INTERNAL, message: `bad response framing (${err.kind})` });
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }
    });
    stream.on("trailers", (h) => {
      fromHeaders(h);
    });
    stream.on("error", (err: Error) => finish({ code: Status.UNAVAILABLE, message: err.message }));
    stream.on("close", () =>
      finish({
        code: Status.UNAVAILABLE,
        message: `the stream closed without a status (code ${stream.rstCode ?? "?"})`,
      }),
    );
  });
}

/** Writes one framed message; resolves once the stream may take more (back-pressure). */
export function writeMessage(stream: http2.ClientHttp2Stream, message: Uint8Array): Promise<void> {
  let ok = true;
  for (const piece of frameMessage(message)) ok = stream.write(piece);
  if (ok) return Promise.resolve();
  return new Promise((resolve) => {
    const go = () => {
      stream.off("drain", go);
      stream.off("close", go);
      resolve();
    };
    stream.on("drain", go);
    stream.on("close", go);
  });
}

/** A unary call: one request, one response (its bytes); rejects with PeerCallError. */
export async function unaryCall(
  session: http2.ClientHttp2Session,
  path: string,
  request: Uint8Array,
  timeoutMs: number,
): Promise<Buffer> {
  const stream = openCall(session, path, timeoutMs);
  let response: Buffer | undefined;
  const status = callStatus(stream, (m) => {
    response = m;
  });
  for (const piece of frameMessage(request)) stream.write(piece);
  stream.end();
  const s = await status;
  if (s.code !== Status.OK) throw new PeerCallError(s.code, s.message);
  if (response === undefined) throw new PeerCallError(Status.INTERNAL, "no response message");
  return response;
}
