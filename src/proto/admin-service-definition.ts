/**
 * kv.v1.AdminService (proto/kv/v1/admin.proto) as method tables: the grpc-js definition
 * (the client, src/client/admin-client.ts, and the grpc-js transport) and the name. The
 * messages are the types generated into ./gen by `npm run gen`.
 */
import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { MethodDefinition } from "@grpc/grpc-js";
import {
  AdminService,
  CheckpointRequestSchema,
  CheckpointResponseSchema,
  CompactRangeProgressSchema,
  CompactRangeRequestSchema,
  FlushRequestSchema,
  FlushResponseSchema,
  StatsRequestSchema,
  StatsResponseSchema,
} from "./gen/kv/v1/admin_pb.js";

/** "kv.v1.AdminService". */
export const ADMIN_SERVICE_NAME = AdminService.typeName;

function method<I extends DescMessage, O extends DescMessage>(
  name: string,
  input: I,
  output: O,
  responseStream: boolean,
): MethodDefinition<MessageShape<I>, MessageShape<O>> {
  return {
    path: `/${ADMIN_SERVICE_NAME}/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: (m) => Buffer.from(toBinary(input, m)),
    requestDeserialize: (b) => fromBinary(input, b),
    responseSerialize: (m) => Buffer.from(toBinary(output, m)),
    responseDeserialize: (b) => fromBinary(output, b),
  };
}

/** Method table keyed by the rpc names of the .proto. */
export const adminServiceDefinition = {
  Checkpoint: method("Checkpoint", CheckpointRequestSchema, CheckpointResponseSchema, false),
  CompactRange: method("CompactRange", CompactRangeRequestSchema, CompactRangeProgressSchema, true),
  Flush: method("Flush", FlushRequestSchema, FlushResponseSchema, false),
  Stats: method("Stats", StatsRequestSchema, StatsResponseSchema, false),
} as const;
