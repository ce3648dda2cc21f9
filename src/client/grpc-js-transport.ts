/**
 * The grpc-js transport of the clients (transport.ts): a grpc-js Client (channel) per
 * endpoint. Kept for one release behind KvClientOptions.transport "grpc-js"; its errors
 * are mapped by call-failure.ts, which knows grpc-js's texts.
 */
import {
  type CallOptions,
  type ChannelCredentials,
  type ChannelOptions,
  Client,
  connectivityState,
  credentials,
  Metadata,
  status,
} from "@grpc/grpc-js";
import { type CallContext, toClientError } from "./call-failure.js";
import { KvClientError } from "./kv-client-error.js";
import {
  type CallTransport,
  type ClientTlsOptions,
  PerEndpoint,
  type TransportBidi,
  type TransportSettings,
  type TransportStream,
  type UnaryMethod,
} from "./transport.js";

export class GrpcJsTransport implements CallTransport {
  private readonly clients: PerEndpoint<Client>;
  private readonly metadata = new Metadata();
  private readonly credentials: ChannelCredentials;
  private readonly channelOptions: ChannelOptions;

  constructor(settings: TransportSettings) {
    const tls = settings.tls;
    this.channelOptions = {
      "grpc.max_receive_message_length": settings.maxReceiveMessageBytes,
      // A restarted member is dialled again within a second, not after grpc-js's default
      // back-off (up to two minutes), during which calls to it fail at once.
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
    };
    if (tls?.serverName !== undefined)
      this.channelOptions["grpc.ssl_target_name_override"] = tls.serverName;
    this.credentials = channelCredentials(tls);
    if (settings.authToken !== undefined) {
      this.metadata.set("authorization", `Bearer ${settings.authToken}`);
    }
    this.clients = new PerEndpoint(
      (endpoint) => new Client(endpoint, this.credentials, this.channelOptions),
    );
  }

  unary<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
    signal?: AbortSignal,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      const onAbort = () => call.cancel();
      const call = this.client(endpoint).makeUnaryRequest(
        method.path,
        (r: Req) => {
          const bytes = method.requestSerialize(r);
          context.requestBytes = bytes.length;
          return bytes;
        },
        method.responseDeserialize,
        request,
        this.metadata,
        callOptions(deadline),
        (err, res) => {
          signal?.removeEventListener("abort", onAbort);
          if (err !== null || res === undefined) reject(toClientError(err, context));
          else resolve(res);
        },
      );
      if (signal !== undefined) {
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
  }

  serverStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
  ): TransportStream<Res> {
    const call = this.client(endpoint).makeServerStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      request,
      this.metadata,
      callOptions(deadline),
    );
    return {
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () => responses<Res>(call, context, () => {}),
    };
  }

  bidiStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    context: CallContext,
  ): TransportBidi<Req, Res> {
    const call = this.client(endpoint).makeBidiStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      this.metadata,
      {},
    );
    // A write after the call ended would raise an error event: writes stop at the end.
    let over = false;
    call.on("status", () => {
      over = true;
    });
    call.on("error", () => {
      over = true;
    });
    return {
      write: (request) => {
        if (over || call.writableEnded || call.destroyed) return false;
        call.write(request);
        return true;
      },
      end: () => {
        if (!over && !call.writableEnded) call.end();
      },
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () =>
        responses<Res>(call, context, () => {
          over = true;
        }),
    };
  }

  connected(endpoint: string, by: number): Promise<void> {
    const channel = this.client(endpoint).getChannel();
    const budget = Math.max(0, by - Date.now());
    return new Promise((resolve, reject) => {
      const check = () => {
        const state = channel.getConnectivityState(true);
        if (state !== connectivityState.IDLE && state !== connectivityState.CONNECTING) {
          resolve();
          return;
        }
        channel.watchConnectivityState(state, by, (err) => {
          if (err === undefined) {
            check();
            return;
          }
          reject(noConnectionWithin(endpoint, budget));
        });
      };
      check();
    });
  }

  close(): void {
    this.clients.close();
  }

  private client(endpoint: string): Client {
    return this.clients.get(endpoint);
  }
}

/**
 * The response messages of a streaming call (errors in the client's words); `ended` runs
 * when the iteration ends, then the call is cancelled.
 */
async function* responses<Res>(
  call: AsyncIterable<unknown> & { cancel(): void },
  context: CallContext,
  ended: () => void,
): AsyncGenerator<Res> {
  try {
    for await (const m of call) yield m as Res;
  } catch (err) {
    throw toClientError(err, context);
  } finally {
    ended();
    call.cancel();
  }
}

/** The failure of a connection still coming up when an attempt's share of time ran out. */
export function noConnectionWithin(endpoint: string, budgetMs: number): KvClientError {
  const text = `no connection within ${budgetMs} ms (is the member paused, or its host down?); nothing was sent`;
  return new KvClientError(status.UNAVAILABLE, text, { endpoint, failure: "no-connection" });
}

function callOptions(deadline: number | undefined): CallOptions {
  return deadline === undefined ? {} : { deadline };
}

function pem(v: string | Uint8Array | undefined): Buffer | null {
  if (v === undefined) return null;
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

/** The channel credentials for `tls` (plaintext when undefined). */
export function channelCredentials(tls: ClientTlsOptions | undefined): ChannelCredentials {
  if (tls === undefined) return credentials.createInsecure();
  return credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}
