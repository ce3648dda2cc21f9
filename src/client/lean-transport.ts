/**
 * The lean transport of the clients (transport.ts, the default): our own HTTP/2 client
 * path (src/grpc/grpc-client.ts over src/grpc/http2/client-connection.ts), one
 * GrpcClient (one connection at a time) per endpoint. Its failures are GrpcCallErrors,
 * mapped to the client's words by call-failure.ts.
 */
import { GrpcCallError, GrpcClient, type ServerStream } from "../grpc/grpc-client.js";
import { type CallContext, toClientError } from "./call-failure.js";
import { noConnectionWithin } from "./grpc-js-transport.js";
import {
  type CallTransport,
  PerEndpoint,
  type TransportBidi,
  type TransportSettings,
  type TransportStream,
  type UnaryMethod,
} from "./transport.js";

/**
 * A stream's receive window of 1 MiB (a scan whose rows are not taken stops the server
 * there), the connection's of 16 MiB (given back as it arrives), as the server grants.
 */
const CONNECTION = { streamWindow: 1 << 20, connectionWindow: 16 << 20 };

export class LeanTransport implements CallTransport {
  private readonly clients: PerEndpoint<GrpcClient>;

  constructor(settings: TransportSettings) {
    const headers: [string, string][] = [];
    if (settings.authToken !== undefined) {
      headers.push(["authorization", `Bearer ${settings.authToken}`]);
    }
    this.clients = new PerEndpoint(
      (endpoint) =>
        new GrpcClient(endpoint, {
          tls: settings.tls,
          headers,
          maxReceiveMessageBytes: settings.maxReceiveMessageBytes,
          connection: CONNECTION,
        }),
    );
  }

  async unary<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
    signal?: AbortSignal,
  ): Promise<Res> {
    const client = this.client(endpoint);
    const bytes = method.requestSerialize(request);
    context.requestBytes = bytes.length;
    let response: Buffer;
    try {
      response = await client.unary(method.path, bytes, { timeoutMs: msUntil(deadline), signal });
    } catch (err) {
      throw toClientError(err, context);
    }
    return decode(method, response, context);
  }

  serverStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
  ): TransportStream<Res> {
    const call: ServerStream = this.client(endpoint).serverStream(
      method.path,
      method.requestSerialize(request),
      { timeoutMs: msUntil(deadline) },
    );
    return {
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () => responses(call, method, context),
    };
  }

  bidiStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    context: CallContext,
  ): TransportBidi<Req, Res> {
    const call = this.client(endpoint).bidiStream(method.path);
    return {
      write: (request) => call.write(method.requestSerialize(request)),
      end: () => call.closeSend(),
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () => responses(call, method, context),
    };
  }

  async connected(endpoint: string, by: number): Promise<void> {
    const budget = Math.max(0, by - Date.now());
    try {
      await this.client(endpoint).whenReady(by);
    } catch (err) {
      if (err instanceof GrpcCallError) throw noConnectionWithin(endpoint, budget);
      throw err;
    }
  }

  close(): void {
    this.clients.close();
  }

  private client(endpoint: string): GrpcClient {
    return this.clients.get(endpoint);
  }
}

/** The decoded response messages of a streaming call; cancels it when left early. */
async function* responses<Req, Res>(
  call: ServerStream,
  method: UnaryMethod<Req, Res>,
  context: CallContext,
): AsyncGenerator<Res> {
  try {
    for (;;) {
      let m: Buffer | undefined;
      try {
        m = await call.next();
      } catch (err) {
        throw toClientError(err, context);
      }
      if (m === undefined) return;
      yield decode(method, m, context);
    }
  } finally {
    call.cancel();
  }
}

/** Milliseconds from now until `deadline` (a Date.now() time; undefined: none). */
function msUntil(deadline: number | undefined): number | undefined {
  return deadline === undefined ? undefined : deadline - Date.now();
}

/** The response message decoded; a message that does not decode is the client's failure. */
function decode<Req, Res>(method: UnaryMethod<Req, Res>, m: Buffer, context: CallContext): Res {
  try {
    return method.responseDeserialize(m);
  } catch {
    throw toClientError(
      GrpcCallError.of({ kind: "bad-answer", why: "the response message does not decode" }),
      context,
    );
  }
}
