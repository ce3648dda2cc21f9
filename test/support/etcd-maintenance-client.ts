/**
 * etcd's Cluster and Maintenance services for tests: @grpc/grpc-js with the generated
 * etcdserverpb messages, one call per method, no retries (as EtcdGrpcClient for KV).
 */
import {
  create,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import {
  AlarmRequestSchema,
  AlarmResponseSchema,
  DefragmentRequestSchema,
  DefragmentResponseSchema,
  HashKVRequestSchema,
  HashKVResponseSchema,
  MemberAddRequestSchema,
  MemberAddResponseSchema,
  MemberListRequestSchema,
  MemberListResponseSchema,
  MemberPromoteRequestSchema,
  MemberPromoteResponseSchema,
  MemberRemoveRequestSchema,
  MemberRemoveResponseSchema,
  MemberUpdateRequestSchema,
  MemberUpdateResponseSchema,
  MoveLeaderRequestSchema,
  MoveLeaderResponseSchema,
  SnapshotRequestSchema,
  type SnapshotResponse,
  SnapshotResponseSchema,
  StatusRequestSchema,
  StatusResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { grpcJsMethod } from "../../src/proto/kv-service-definition.js";

type Init<I extends DescMessage> = MessageInitShape<I>;

export class EtcdMaintenanceClient {
  private readonly client: Client;

  constructor(
    readonly address: string,
    private readonly metadata: Record<string, string> = {},
    private readonly deadlineMs = 30_000,
  ) {
    this.client = new Client(address, credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
  }

  private md(): Metadata {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.metadata)) md.set(k, v);
    return md;
  }

  call<I extends DescMessage, O extends DescMessage>(
    service: string,
    name: string,
    input: I,
    output: O,
    request: Init<I>,
  ): Promise<MessageShape<O>> {
    const m = grpcJsMethod(service, name, input, output, false);
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        create(input, request),
        this.md(),
        { deadline: Date.now() + this.deadlineMs },
        (err, res) => {
          if (err !== null || res === undefined) reject(err ?? new Error(`${name}: no response`));
          else resolve(res);
        },
      );
    });
  }

  private cluster<I extends DescMessage, O extends DescMessage>(
    name: string,
    i: I,
    o: O,
    r: Init<I>,
  ) {
    return this.call("etcdserverpb.Cluster", name, i, o, r);
  }

  private maintenance<I extends DescMessage, O extends DescMessage>(
    name: string,
    i: I,
    o: O,
    r: Init<I>,
  ) {
    return this.call("etcdserverpb.Maintenance", name, i, o, r);
  }

  memberList() {
    return this.cluster("MemberList", MemberListRequestSchema, MemberListResponseSchema, {});
  }
  memberAdd(r: Init<typeof MemberAddRequestSchema>) {
    return this.cluster("MemberAdd", MemberAddRequestSchema, MemberAddResponseSchema, r);
  }
  memberRemove(r: Init<typeof MemberRemoveRequestSchema>) {
    return this.cluster("MemberRemove", MemberRemoveRequestSchema, MemberRemoveResponseSchema, r);
  }
  memberUpdate(r: Init<typeof MemberUpdateRequestSchema>) {
    return this.cluster("MemberUpdate", MemberUpdateRequestSchema, MemberUpdateResponseSchema, r);
  }
  memberPromote(r: Init<typeof MemberPromoteRequestSchema>) {
    return this.cluster(
      "MemberPromote",
      MemberPromoteRequestSchema,
      MemberPromoteResponseSchema,
      r,
    );
  }
  status() {
    return this.maintenance("Status", StatusRequestSchema, StatusResponseSchema, {});
  }
  hashKv(revision = 0n) {
    return this.maintenance("HashKV", HashKVRequestSchema, HashKVResponseSchema, { revision });
  }
  defragment() {
    return this.maintenance("Defragment", DefragmentRequestSchema, DefragmentResponseSchema, {});
  }
  moveLeader(targetID: bigint) {
    return this.maintenance("MoveLeader", MoveLeaderRequestSchema, MoveLeaderResponseSchema, {
      targetID,
    });
  }
  alarm(r: Init<typeof AlarmRequestSchema>) {
    return this.maintenance("Alarm", AlarmRequestSchema, AlarmResponseSchema, r);
  }

  /** Every message of a Snapshot stream. */
  snapshot(): Promise<SnapshotResponse[]> {
    const m = grpcJsMethod(
      "etcdserverpb.Maintenance",
      "Snapshot",
      SnapshotRequestSchema,
      SnapshotResponseSchema,
      true,
    );
    const call = this.client.makeServerStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      create(SnapshotRequestSchema, {}),
      this.md(),
      { deadline: Date.now() + this.deadlineMs },
    );
    const out: SnapshotResponse[] = [];
    return new Promise((resolve, reject) => {
      call.on("data", (r: SnapshotResponse) => out.push(r));
      call.on("error", reject);
      call.on("end", () => resolve(out));
    });
  }

  close(): void {
    this.client.close();
  }
}
