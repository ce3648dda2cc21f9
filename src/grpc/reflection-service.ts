/**
 * Server reflection, grpc.reflection.v1 and v1alpha (the same protocol under two names;
 * grpcurl, grpcui and Postman use one or the other): lists the services of a server and
 * returns the protobuf file descriptors that define them, so that tools need no .proto
 * files. Answers, one response per request on the stream:
 * - list_services: every service registered on the server (reflection and health included);
 * - file_containing_symbol: the file defining a service, method, message, enum or field,
 *   with the files it depends on (transitively);
 * - file_by_filename: that file, with its dependencies;
 * - all_extension_numbers_of_type: an empty list for a known message (no extensions here);
 * - anything not found: error_response NOT_FOUND.
 */
import { createRegistry, type DescFile, type Registry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as v1 from "../proto/gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../proto/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { type MethodDescriptor, protobufMethod, type ServiceDescriptor } from "./method.js";
import type { RequestStream, ServerCall } from "./server-call.js";
import { Status } from "./status.js";

const V1 = "grpc.reflection.v1.ServerReflection";
const V1ALPHA = "grpc.reflection.v1alpha.ServerReflection";

export const reflectionServiceV1 = {
  name: V1,
  file: v1.file_grpc_reflection_v1_reflection,
  methods: {
    ServerReflectionInfo: protobufMethod(
      V1,
      "ServerReflectionInfo",
      "bidi_streaming",
      v1.ServerReflectionRequestSchema,
      v1.ServerReflectionResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

export const reflectionServiceV1alpha = {
  name: V1ALPHA,
  file: v1alpha.file_grpc_reflection_v1alpha_reflection,
  methods: {
    ServerReflectionInfo: protobufMethod(
      V1ALPHA,
      "ServerReflectionInfo",
      "bidi_streaming",
      v1alpha.ServerReflectionRequestSchema,
      v1alpha.ServerReflectionResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

/** The request and response of either version, as plain shapes (they have the same fields). */
type Request = v1.ServerReflectionRequest;
type Response = Omit<v1.ServerReflectionResponse, "$typeName" | "originalRequest"> & {
  originalRequest?: Request;
};

/** What reflection describes: the services' names and the files that define them. */
export interface ReflectionSource {
  readonly registeredServices: readonly ServiceDescriptor[];
}

export class ReflectionService {
  private registry: Registry | undefined;
  private readonly byName = new Map<string, DescFile>();

  constructor(private readonly source: ReflectionSource) {}

  /** The handler of ServerReflectionInfo, for both versions. */
  handler<Req, Res>(version: "v1" | "v1alpha") {
    return async (requests: RequestStream<Req>, call: ServerCall<Res>): Promise<void> => {
      for await (const request of requests) {
        const answer = this.answer(request as unknown as Request);
        const typeName =
          version === "v1"
            ? "grpc.reflection.v1.ServerReflectionResponse"
            : "grpc.reflection.v1alpha.ServerReflectionResponse";
        const message = { $typeName: typeName, ...answer } as unknown as Res;
        if (!call.write(message)) await call.whenWritable();
      }
    };
  }

  private answer(request: Request): Response {
    const base = { validHost: "", originalRequest: request };
    const r = request.messageRequest;
    switch (r.case) {
      case "listServices":
        return {
          ...base,
          messageResponse: {
            case: "listServicesResponse",
            value: {
              $typeName: "grpc.reflection.v1.ListServiceResponse",
              service: this.source.registeredServices.map((s) => ({
                $typeName: "grpc.reflection.v1.ServiceResponse" as const,
                name: s.name,
              })),
            },
          },
        };
      case "fileByFilename":
        this.files_();
        return this.files(base, this.byName.get(r.value), `file ${r.value}`);
      case "fileContainingSymbol":
        return this.files(base, this.fileOfSymbol(r.value), `symbol ${r.value}`);
      case "fileContainingExtension":
        return this.notFound(
          base,
          `extension ${r.value.extensionNumber} of ${r.value.containingType}`,
        );
      case "allExtensionNumbersOfType":
        if (this.files_().getMessage(r.value) === undefined)
          return this.notFound(base, `type ${r.value}`);
        return {
          ...base,
          messageResponse: {
            case: "allExtensionNumbersResponse",
            value: {
              $typeName: "grpc.reflection.v1.ExtensionNumberResponse",
              baseTypeName: r.value,
              extensionNumber: [],
            },
          },
        };
      default:
        return this.notFound(base, "an empty request");
    }
  }

  private files_(): Registry {
    if (this.registry === undefined) {
      const files: DescFile[] = [];
      const add = (f: DescFile) => {
        if (this.byName.has(f.proto.name)) return;
        this.byName.set(f.proto.name, f);
        files.push(f);
        for (const d of f.dependencies) add(d);
      };
      for (const s of this.source.registeredServices) if (s.file !== undefined) add(s.file);
      this.registry = createRegistry(...files);
    }
    return this.registry;
  }

  private fileOfSymbol(symbol: string): DescFile | undefined {
    const registry = this.files_();
    const found = registry.get(symbol);
    if (found !== undefined) return found.file;
    // A method of a service, or a field or nested name of a message.
    const dot = symbol.lastIndexOf(".");
    if (dot < 0) return undefined;
    const parent = registry.get(symbol.slice(0, dot));
    const member = symbol.slice(dot + 1);
    if (parent?.kind === "service")
      return parent.methods.some((m) => m.name === member) ? parent.file : undefined;
    if (parent?.kind === "message")
      return parent.fields.some((f) => f.name === member) ? parent.file : undefined;
    return undefined;
  }

  private files(
    base: Pick<Response, "validHost" | "originalRequest">,
    file: DescFile | undefined,
    what: string,
  ): Response {
    if (file === undefined) return this.notFound(base, what);
    const out: DescFile[] = [];
    const visit = (f: DescFile) => {
      if (out.includes(f)) return;
      out.push(f);
      for (const d of f.dependencies) visit(d);
    };
    visit(file);
    return {
      ...base,
      messageResponse: {
        case: "fileDescriptorResponse",
        value: {
          $typeName: "grpc.reflection.v1.FileDescriptorResponse",
          fileDescriptorProto: out.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)),
        },
      },
    };
  }

  private notFound(base: Pick<Response, "validHost" | "originalRequest">, what: string): Response {
    return {
      ...base,
      messageResponse: {
        case: "errorResponse",
        value: {
          $typeName: "grpc.reflection.v1.ErrorResponse",
          errorCode: Status.NOT_FOUND,
          errorMessage: `${what} not found`,
        },
      },
    };
  }
}

/** A method descriptor of either version, for registration. */
export type ReflectionMethod = MethodDescriptor;
