/**
 * `kv-engine cluster add NAME --peer-address H:P --learner` and `cluster promote MEMBER`:
 * etcd's Cluster API (MemberAdd with is_learner, MemberPromote), which kv.v1's cluster
 * service does not offer: a learner added so stays one until promoted. Member IDs are hex,
 * as the other cluster actions print them.
 */
import { create } from "@bufbuild/protobuf";
import {
  MemberAddRequestSchema,
  MemberListRequestSchema,
  MemberPromoteRequestSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_OK, type Parsed } from "./command.js";
import { etcdAdminMethods } from "./etcd-admin-methods.js";
import { etcdClient, hexId as hex, line } from "./etcd-command.js";

/** A peer URL as kv-engine's flags take it: host:port for http://, else the URL. */
const address = (url: string) => url.replace(/^http:\/\//, "");

/** Adds learner `name` at `peerAddress` (host:port, or a URL) and prints how to start it. */
export async function addLearner(
  p: Parsed,
  name: string,
  peerAddress: string,
  json: boolean,
): Promise<number> {
  const url = /^[a-z]+:\/\//.test(peerAddress) ? peerAddress : `http://${peerAddress}`;
  const client = etcdClient(p);
  try {
    const r = await client.calls.unary(
      "write",
      etcdAdminMethods.MemberAdd,
      create(MemberAddRequestSchema, { peerURLs: [url], isLearner: true }),
      undefined,
    );
    const id = r.member?.ID ?? 0n;
    const initialCluster = r.members
      .map((m) => `${m.ID === id ? name : m.name}=${address(m.peerURLs[0] ?? "")}`)
      .join(",");
    if (json) {
      line(
        JSON.stringify({
          member: {
            name,
            id: hex(id),
            peerAddress: address(url),
            learner: r.member?.isLearner === true,
          },
          cluster: hex(r.header?.clusterId ?? 0n),
          initialCluster,
          initialClusterState: "existing",
        }),
      );
      return EXIT_OK;
    }
    line(
      `Added member ${name} (ID ${hex(id)}) to cluster ${hex(r.header?.clusterId ?? 0n)} as a learner; it stays one until 'kv-engine cluster promote ${hex(id)}'.`,
    );
    line("Start it (with an empty data directory, and its own --host/--port) with:");
    line(
      `  kv-engine serve --data-dir DIR --name ${name} --initial-cluster ${initialCluster} --initial-cluster-state existing`,
    );
    return EXIT_OK;
  } finally {
    client.close();
  }
}

/** Promotes learner `ref` (its name, or its ID in hex) to voter. */
export async function promote(p: Parsed, ref: string, json: boolean): Promise<number> {
  const client = etcdClient(p);
  try {
    const list = await client.calls.unary(
      "read",
      etcdAdminMethods.MemberList,
      create(MemberListRequestSchema, {}),
      undefined,
    );
    const m =
      list.members.find((x) => x.name === ref) ??
      list.members.find((x) => hex(x.ID) === ref.toLowerCase());
    if (m === undefined) {
      const names = list.members.map((x) => `${x.name || "(unstarted)"}=${hex(x.ID)}`);
      throw new Error(`no member ${ref} (members: ${names.join(", ")})`);
    }
    const r = await client.calls.unary(
      "write",
      etcdAdminMethods.MemberPromote,
      create(MemberPromoteRequestSchema, { ID: m.ID }),
      undefined,
    );
    const voters = r.members.filter((x) => !x.isLearner).length;
    const name = m.name || "(unstarted)";
    if (json) line(JSON.stringify({ promoted: hex(m.ID), name: m.name, voters }));
    else line(`Promoted member ${name} (ID ${hex(m.ID)}) to voter; voters now: ${voters}`);
    return EXIT_OK;
  } finally {
    client.close();
  }
}
