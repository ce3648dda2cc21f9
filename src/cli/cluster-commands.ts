/**
 * `kv-engine cluster list|add|remove|transfer-leader|status --addr H:P[,H:P...]`: the
 * cluster service (kv.v1.ClusterService) for people at a terminal (docs/cluster.md,
 * "Adding and removing members"). Members are named by name or by hex ID. `add` prints
 * the flags the new member starts with, as etcd's `member add` does. `--json` prints one
 * JSON object per line; member IDs are hex everywhere, as the listening line prints them.
 */
import type { KvClient, MemberRecord, MemberStatusRecord } from "../client/kv-client.js";
import { COMMON_OPTIONS, COMMON_USAGE } from "./client-commands.js";
import {
  EXIT_FAILURE,
  EXIT_OK,
  type Parsed,
  runCommand,
  stringOption,
  UsageError,
} from "./command.js";
import { kvClient } from "./connection-options.js";
import { textTable } from "./text-table.js";

const USAGE = `Usage: kv-engine cluster ACTION [options]

Actions (kv.v1's cluster service but where said; ask any member; --addr may list several):
  list                      the members: name, ID, voter or learner, addresses, leader
  add NAME --peer-address HOST:PORT [--client-address HOST:PORT]
                            add a member (as a learner, promoted once caught up) and
                            print the flags it starts with
  add NAME --peer-address HOST:PORT --learner
                            add a learner that stays one until promoted (etcd's
                            MemberAdd with is_learner; one learner at a time)
  promote NAME|ID           make a learner a voter (etcd's MemberPromote: refused until
                            it caught up with the leader)
  remove NAME|ID            remove a member
  transfer-leader [--to MEMBER]
                            hand leadership to a member (default: the most caught up)
  status                    each member's role, term, leader, commit and applied index,
                            and how long ago the answering member heard from its peers

Cluster options:
  --peer-address HOST:PORT  (add) the new member's peer address
  --client-address HOST:PORT
                            (add) its client address (else it publishes its own)
  --learner                 (add) a learner until 'cluster promote'
  --to MEMBER               (transfer-leader) the member to lead: its name or hex ID

${COMMON_USAGE}`;

const OPTIONS = {
  ...COMMON_OPTIONS,
  "peer-address": { type: "string" },
  "client-address": { type: "string" },
  learner: { type: "boolean" },
  to: { type: "string" },
} as const;

const hex = (id: number) => id.toString(16);

function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** The member named `ref` (a name, or an ID in hex). */
function find(members: readonly MemberRecord[], ref: string): MemberRecord {
  const m =
    members.find((x) => x.name === ref) ??
    (/^[0-9a-f]+$/i.test(ref) ? members.find((x) => x.id === Number.parseInt(ref, 16)) : undefined);
  if (m === undefined) {
    throw new Error(
      `no member ${ref} (members: ${members.map((x) => `${x.name}=${hex(x.id)}`).join(", ")})`,
    );
  }
  return m;
}

/** The name of member `id` (its hex ID when not listed; "none" for 0). */
function leaderName(members: readonly MemberRecord[], id: number): string {
  if (id === 0) return "none";
  return members.find((m) => m.id === id)?.name ?? hex(id);
}

function args(p: Parsed, n: number, what: string): string[] {
  const rest = p.positionals.slice(1);
  if (rest.length !== n) throw new UsageError(`${p.positionals[0]} takes ${what}`);
  return rest;
}

async function list(client: KvClient, json: boolean): Promise<number> {
  const l = await client.memberList();
  if (json) {
    for (const m of l.members) {
      line(JSON.stringify({ ...m, id: hex(m.id), leader: m.id === l.leaderId }));
    }
    return EXIT_OK;
  }
  const rows = l.members.map((m) => [
    m.name,
    hex(m.id),
    m.learner ? "learner" : "voter",
    m.peerAddress,
    m.clientAddress === "" ? "-" : m.clientAddress,
    m.id === l.leaderId ? "*" : "",
  ]);
  line(
    textTable(["NAME", "ID", "KIND", "PEER ADDRESS", "CLIENT ADDRESS", "LEADER"], rows).join("\n"),
  );
  return EXIT_OK;
}

async function add(client: KvClient, p: Parsed, json: boolean): Promise<number> {
  const [name] = args(p, 1, "NAME --peer-address HOST:PORT");
  const peerAddress = stringOption(p, "peer-address");
  if (peerAddress === undefined) throw new UsageError("add needs --peer-address HOST:PORT");
  const clientAddress = stringOption(p, "client-address");
  if (p.values.learner === true) {
    if (clientAddress !== undefined) throw new UsageError("--learner takes no --client-address");
    const { addLearner } = await import("./member-commands.js");
    return addLearner(p, name!, peerAddress, json);
  }
  const r = await client.memberAdd({
    name: name!,
    peerAddress,
    ...(clientAddress === undefined ? {} : { clientAddress }),
  });
  const initialCluster = r.members.map((m) => `${m.name}=${m.peerAddress}`).join(",");
  const flags = [
    `--name ${r.member.name}`,
    `--initial-cluster ${initialCluster}`,
    "--initial-cluster-state existing",
  ];
  if (json) {
    line(
      JSON.stringify({
        member: { ...r.member, id: hex(r.member.id) },
        cluster: hex(r.clusterId),
        initialCluster,
        initialClusterState: "existing",
      }),
    );
    return EXIT_OK;
  }
  line(
    `Added member ${r.member.name} (ID ${hex(r.member.id)}) to cluster ${hex(r.clusterId)} as a learner; the leader promotes it to voter once it caught up.`,
  );
  line("Start it (with an empty data directory, and its own --host/--port) with:");
  line(`  kv-engine serve --data-dir DIR ${flags.join(" ")}`);
  line(
    "adding the --peer-tls-* flags the other members use, and --peer-port if it listens for peers on another port than its advertised peer address's.",
  );
  return EXIT_OK;
}

async function remove(client: KvClient, p: Parsed, json: boolean): Promise<number> {
  const [ref] = args(p, 1, "NAME|ID");
  const m = find((await client.memberList()).members, ref!);
  const after = await client.memberRemove(m.id);
  if (json) line(JSON.stringify({ removed: hex(m.id), members: after.map((x) => x.name) }));
  else
    line(
      `Removed member ${m.name} (ID ${hex(m.id)}); members now: ${after.map((x) => x.name).join(", ")}`,
    );
  return EXIT_OK;
}

async function transfer(client: KvClient, p: Parsed, json: boolean): Promise<number> {
  args(p, 0, "no argument (use --to MEMBER)");
  const ref = stringOption(p, "to");
  const members = (await client.memberList()).members;
  const to = ref === undefined ? 0 : find(members, ref).id;
  const leader = await client.transferLeadership(to);
  const name = members.find((m) => m.id === leader)?.name ?? "?";
  if (json) line(JSON.stringify({ leader: hex(leader), name }));
  else line(`Leader is now ${name} (ID ${hex(leader)})`);
  return EXIT_OK;
}

async function status(client: KvClient, json: boolean): Promise<number> {
  const l = await client.memberList();
  const results = await Promise.all(
    l.members.map(async (m) => {
      if (m.clientAddress === "")
        return { m, s: undefined, err: "no client address published yet" };
      try {
        return { m, s: await client.status(m.clientAddress), err: undefined };
      } catch (err) {
        return { m, s: undefined, err: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
  const heard = (s: MemberStatusRecord | undefined, id: number): string => {
    const p = s?.peers.find((x) => x.id === id);
    return p === undefined || p.lastContactMs < 0 ? "-" : `${p.lastContactMs} ms`;
  };
  const leaderStatus = results.find((r) => r.s?.role === "leader")?.s;
  if (json) {
    for (const { m, s, err } of results) {
      line(
        JSON.stringify(
          s === undefined
            ? { name: m.name, id: hex(m.id), error: err }
            : {
                ...s,
                clusterId: hex(s.clusterId),
                memberId: hex(s.memberId),
                leaderId: hex(s.leaderId),
                peers: s.peers.map((p) => ({ ...p, id: hex(p.id) })),
              },
        ),
      );
    }
    return results.every((r) => r.s !== undefined) ? EXIT_OK : EXIT_FAILURE;
  }
  const rows = results.map(({ m, s }) =>
    s === undefined
      ? [m.name, hex(m.id), m.clientAddress || "-", "unreachable", "", "", "", "", ""]
      : [
          m.name,
          hex(m.id),
          m.clientAddress,
          s.role + (s.removed ? " (removed)" : "") + (s.failure !== "" ? " (failed)" : ""),
          String(s.term),
          leaderName(l.members, s.leaderId),
          String(s.commitIndex),
          String(s.appliedIndex),
          leaderStatus === undefined || leaderStatus.memberId === m.id
            ? "-"
            : heard(leaderStatus, m.id),
        ],
  );
  line(
    textTable(
      [
        "NAME",
        "ID",
        "CLIENT ADDRESS",
        "ROLE",
        "TERM",
        "LEADER",
        "COMMIT",
        "APPLIED",
        "LEADER HEARD",
      ],
      rows,
    ).join("\n"),
  );
  for (const { m, err } of results) if (err !== undefined) line(`${m.name}: ${err}`);
  const leaders = new Set(results.map((r) => r.s?.leaderId ?? 0).filter((id) => id !== 0));
  if (leaders.size === 0) line("no member knows a leader");
  return results.every((r) => r.s !== undefined) ? EXIT_OK : EXIT_FAILURE;
}

export function clusterCommand(argv: string[]): Promise<number> {
  return runCommand("cluster", USAGE, argv, OPTIONS, async (parsed) => {
    const action = parsed.positionals[0];
    if (action === undefined)
      throw new UsageError("give an action: list, add, promote, remove, transfer-leader or status");
    const client = kvClient(parsed);
    const json = parsed.values.json === true;
    try {
      switch (action) {
        case "list":
          args(parsed, 0, "no argument");
          return await list(client, json);
        case "add":
          return await add(client, parsed, json);
        case "remove":
          return await remove(client, parsed, json);
        case "promote": {
          const [ref] = args(parsed, 1, "NAME|ID");
          const { promote } = await import("./member-commands.js");
          return await promote(parsed, ref!, json);
        }
        case "transfer-leader":
          return await transfer(client, parsed, json);
        case "status":
          args(parsed, 0, "no argument");
          return await status(client, json);
        default:
          throw new UsageError(
            `unknown action '${action}' (list, add, promote, remove, transfer-leader, status)`,
          );
      }
    } finally {
      client.close();
    }
  });
}
