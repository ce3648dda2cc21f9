/**
 * The grpc-js definition of kv.v1.KvService (proto/kv/v1/kv.proto), shared by the server
 * and the client. Messages are the types generated into ./gen by `npm run gen`; each
 * method encodes and decodes them with @bufbuild/protobuf's toBinary/fromBinary, except
 * Scan responses (scan-codec.ts).
 */
import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { MethodDefinition } from "@grpc/grpc-js";
import {
  CompareAndSwapRequestSchema,
  CompareAndSwapResponseSchema,
  DeleteRequestSchema,
  DeleteResponseSchema,
  file_kv_v1_kv,
  GetRequestSchema,
  GetResponseSchema,
  KvService,
  OpenSessionRequestSchema,
  OpenSessionResponseSchema,
  PutRequestSchema,
  PutResponseSchema,
  ScanRequestSchema,
  ScanResponseSchema,
  WriteRequestSchema,
  WriteResponseSchema,
} from "./gen/kv/v1/kv_pb.js";
import { decodeScanResponse, encodeScanResponse } from "./scan-codec.js";

/** Full name of the service, as in method paths and health checks: "kv.v1.KvService". */
export const KV_SERVICE_NAME = KvService.typeName;

type Method<I extends DescMessage, O extends DescMessage> = MethodDefinition<
  MessageShape<I>,
  MessageShape<O>
>;

function method<I extends DescMessage, O extends DescMessage>(
  name: string,
  input: I,
  output: O,
  responseStream: boolean,
): Method<I, O> {
  return grpcJsMethod(KV_SERVICE_NAME, name, input, output, responseStream);
}

/** A grpc-js method definition of `service`'s rpc `name`, with protobuf-es codecs. */
export function grpcJsMethod<I extends DescMessage, O extends DescMessage>(
  service: string,
  name: string,
  input: I,
  output: O,
  responseStream: boolean,
): Method<I, O> {
  return {
    path: `/${service}/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: (m) => Buffer.from(toBinary(input, m)),
    requestDeserialize: (b) => fromBinary(input, b),
    responseSerialize: (m) => Buffer.from(toBinary(output, m)),
    responseDeserialize: (b) => fromBinary(output, b),
  };
}

/** Method table keyed by the rpc names of the .proto (what grpc-js calls a service). */
export const kvServiceDefinition = {
  Put: method("Put", PutRequestSchema, PutResponseSchema, false),
  Get: method("Get", GetRequestSchema, GetResponseSchema, false),
  Delete: method("Delete", DeleteRequestSchema, DeleteResponseSchema, false),
  Scan: {
    ...method("Scan", ScanRequestSchema, ScanResponseSchema, true),
    // Scan responses carry the rows: a hand-written codec (same bytes, a fraction of the cost).
    responseSerialize: encodeScanResponse,
    responseDeserialize: decodeScanResponse,
  },
  Write: method("Write", WriteRequestSchema, WriteResponseSchema, false),
  CompareAndSwap: method(
    "CompareAndSwap",
    CompareAndSwapRequestSchema,
    CompareAndSwapResponseSchema,
    false,
  ),
  OpenSession: method("OpenSession", OpenSessionRequestSchema, OpenSessionResponseSchema, false),
} as const;

/** The serialized FileDescriptorProto of kv/v1/kv.proto (for server reflection). */
export function kvFileDescriptor(): Uint8Array {
  return toBinary(FileDescriptorProtoSchema, file_kv_v1_kv.proto);
}
