/**
 * Services as the server registers them: a service descriptor names the service, its
 * methods (path, kind, request decoder, response encoder) and, for server reflection, the
 * protobuf file that defines it; an implementation gives a handler per method, whose shape
 * follows the method's kind.
 *
 * Handlers:
 * - unary: `(request, call) => response` (or a promise of it);
 * - server streaming: `(request, call) => void | Promise<void>`, writing with `call.write`;
 * - client streaming: `(requests, call) => response`, reading `requests` (async iterable);
 * - bidi streaming: `(requests, call) => void | Promise<void>`.
 * The call ends when the handler returns (status OK) or throws (a GrpcError's status, or
 * whatever the server's `errorStatus` makes of other errors).
 */
import {
  type DescFile,
  type DescMessage,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import type { RequestStream, ServerCall } from "./server-call.js";

export type MethodKind = "unary" | "server_streaming" | "client_streaming" | "bidi_streaming";

export interface MethodDescriptor<Req = unknown, Res = unknown, K extends MethodKind = MethodKind> {
  /** The rpc's name in its service ("Get"). */
  readonly name: string;
  /** "/package.Service/Method". */
  readonly path: string;
  readonly kind: K;
  /** Decodes a request message; throws on malformed input. */
  decode(bytes: Buffer): Req;
  encode(message: Res): Uint8Array;
}

export interface ServiceDescriptor<
  M extends Record<string, MethodDescriptor> = Record<string, MethodDescriptor>,
> {
  /** Full name, as in paths and health checks ("kv.v1.KvService"). */
  readonly name: string;
  readonly methods: M;
  /** The file defining the service, for server reflection. */
  readonly file?: DescFile;
}

export type UnaryHandler<Req, Res> = (request: Req, call: ServerCall<never>) => Res | Promise<Res>;
export type ServerStreamingHandler<Req, Res> = (
  request: Req,
  call: ServerCall<Res>,
) => void | Promise<void>;
export type ClientStreamingHandler<Req, Res> = (
  requests: RequestStream<Req>,
  call: ServerCall<never>,
) => Res | Promise<Res>;
export type BidiStreamingHandler<Req, Res> = (
  requests: RequestStream<Req>,
  call: ServerCall<Res>,
) => void | Promise<void>;

export type HandlerFor<D> =
  D extends MethodDescriptor<infer Req, infer Res, infer K>
    ? K extends "unary"
      ? UnaryHandler<Req, Res>
      : K extends "server_streaming"
        ? ServerStreamingHandler<Req, Res>
        : K extends "client_streaming"
          ? ClientStreamingHandler<Req, Res>
          : BidiStreamingHandler<Req, Res>
    : never;

export type ServiceImplementation<S extends ServiceDescriptor> = {
  [K in keyof S["methods"]]: HandlerFor<S["methods"][K]>;
};

/** A method whose messages are protobuf-es messages of `input` and `output`. */
export function protobufMethod<I extends DescMessage, O extends DescMessage, K extends MethodKind>(
  service: string,
  name: string,
  kind: K,
  input: I,
  output: O,
): MethodDescriptor<MessageShape<I>, MessageShape<O>, K> {
  return {
    name,
    path: `/${service}/${name}`,
    kind,
    decode: (bytes) => fromBinary(input, bytes),
    encode: (message) => toBinary(output, message),
  };
}
