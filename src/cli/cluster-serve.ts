/**
 * `kv-engine serve` in cluster mode (with --initial-cluster; docs/cluster.md): the flags,
 * and the life of a member process. Prints exactly one line on stdout once it accepts
 * calls, for people and harnesses:
 *
 *   kv-engine listening on HOST:PORT peer HOST:PEERPORT name NAME member ID cluster ID
 *
 * (IDs in hex). Health is NOT_SERVING until the member knows a leader. On SIGINT or
 * SIGTERM a leader first hands leadership to the most caught-up voter, then the server
 * shuts down gracefully and the store closes; exit 0.
 */
import { createServer as netServer } from "node:net";
import { resolve } from "node:path";
import type { Logger } from "pino";
import type { ClusterNode, ClusterNodeOptions } from "../cluster/cluster-node.js";
import type { PeerTlsOptions } from "../cluster/peer-call.js";
import type { PeerTransportEvent } from "../cluster/peer-events.js";
import { clusterEventLogger } from "../observability/cluster-event-log.js";
import { ClusterMetrics } from "../observability/cluster-metrics.js";
import type { KvMetrics } from "../observability/metrics.js";
import type { ReplicationEvent } from "../replication/events.js";
import { formatMemberId } from "../replication/members.js";
import type { KvServerOptions } from "../server/kv-server.js";
import { fileOption, intOption, type Parsed, stringOption, UsageError } from "./command.js";
import { bareHost } from "./listen-checks.js";

export const CLUSTER_USAGE = `Cluster mode (docs/cluster.md): with --initial-cluster, DIR holds a cluster member
(its store, Raft log and snapshots); without it, DIR is a single-node store as ever.
  --name NAME                this member's name (required; letters, digits, . _ -)
  --initial-cluster LIST     the members: n1=HOST:PEERPORT,n2=...; this member's entry is
                             its advertised peer address
  --initial-cluster-state S  new (default: bootstrap the cluster of LIST on first start) or
                             existing (join a running cluster after kv-engine cluster add)
  --initial-cluster-token T  part of the cluster's identity (default kv-engine-cluster):
                             give each cluster its own
  --peer-port PORT           port of the peer service (default: the port in LIST)
  --peer-host HOST           interface of the peer service (default --host)
  --advertise-client-address HOST:PORT  client address published to the cluster
                             (default --host:--port; required when --host is a wildcard)
  --peer-tls-cert FILE       PEM certificate of this member for the peer port, also shown
                             to peers when dialling (needs --peer-tls-key, --peer-tls-ca)
  --peer-tls-key FILE        its private key
  --peer-tls-ca FILE         the CA of the members' certificates; peers must present one
                             (mutual TLS) unless --peer-tls-no-client-auth
  --peer-tls-no-client-auth  serve peer TLS without requiring peers' certificates
  --peer-tls-server-name N   name to check in peers' certificates (default: their host)
  --tick-ms N                milliseconds per Raft tick, the heartbeat interval (default 100)
  --election-ticks N         ticks without a leader before an election (default 6;
                             timeouts are drawn from [N, 2N) ticks)
  --snapshot-entries N       take a snapshot every N applied entries (default 10000)
  --catch-up-entries N       Raft log entries kept behind a snapshot for lagging
                             followers (default 5000; 0 compacts up to the snapshot)
  --join-timeout-ms N        how long a joining member asks for its IDs (default 30000)
  --corrupt-check-interval-ms N
                             etcd's corruption check: the leader proposes its HashKV
                             every N ms, a member that differs raises CORRUPT (default 0:
                             off, as etcd's)
  --initial-snapshot FILE    a new cluster starts with the data of FILE (what etcd's
                             Snapshot streamed: etcdctl snapshot save); give every
                             initial member the same file (ignored once the member's
                             directory exists)
  --upgrade-revisions        a cluster made before revisions (kv.v1 only): once this
                             member leads, every member's store gets revisions (for etcd's
                             API); run every member with this version first
  --peer-dial-override LIST  test hook: PEERADDR=HOST:PORT,...: dial HOST:PORT instead of
                             a member's peer address (e.g. a TCP proxy per link)
`;

export const CLUSTER_OPTIONS = {
  name: { type: "string" },
  "initial-cluster": { type: "string" },
  "initial-cluster-state": { type: "string" },
  "initial-cluster-token": { type: "string" },
  "peer-port": { type: "string" },
  "peer-host": { type: "string" },
  "advertise-client-address": { type: "string" },
  "peer-tls-cert": { type: "string" },
  "peer-tls-key": { type: "string" },
  "peer-tls-ca": { type: "string" },
  "peer-tls-no-client-auth": { type: "boolean" },
  "peer-tls-server-name": { type: "string" },
  "tick-ms": { type: "string" },
  "election-ticks": { type: "string" },
  "snapshot-entries": { type: "string" },
  "catch-up-entries": { type: "string" },
  "join-timeout-ms": { type: "string" },
  "peer-dial-override": { type: "string" },
  "upgrade-revisions": { type: "boolean" },
  "initial-snapshot": { type: "string" },
  "corrupt-check-interval-ms": { type: "string" },
} as const;

/** True iff the command line asks for cluster mode; throws UsageError for cluster flags without it. */
export function isClusterMode(p: Parsed): boolean {
  if (stringOption(p, "initial-cluster") !== undefined) return true;
  for (const name of Object.keys(CLUSTER_OPTIONS)) {
    if (p.values[name] !== undefined) {
      throw new UsageError(`--${name} is a cluster flag: it needs --initial-cluster`);
    }
  }
  return false;
}

/** Parses `A=B,C=D` (the dial override test hook). */
export function parseDialOverrides(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(",")) {
    const p = part.trim();
    if (p === "") continue;
    const eq = p.indexOf("=");
    if (eq <= 0 || eq === p.length - 1) {
      throw new UsageError(`--peer-dial-override entries are PEERADDR=HOST:PORT, got '${p}'`);
    }
    out.set(p.slice(0, eq), p.slice(eq + 1));
  }
  return out;
}

function peerTls(p: Parsed): PeerTlsOptions | undefined {
  const cert = fileOption(p, "peer-tls-cert");
  const key = fileOption(p, "peer-tls-key");
  const ca = fileOption(p, "peer-tls-ca");
  const given = [cert, key, ca].filter((x) => x !== undefined).length;
  if (given === 0) {
    if (p.values["peer-tls-no-client-auth"] === true || stringOption(p, "peer-tls-server-name")) {
      throw new UsageError(
        "--peer-tls-no-client-auth and --peer-tls-server-name need --peer-tls-cert",
      );
    }
    return undefined;
  }
  if (given !== 3) {
    throw new UsageError("--peer-tls-cert, --peer-tls-key and --peer-tls-ca go together");
  }
  const name = stringOption(p, "peer-tls-server-name");
  return {
    cert: cert!,
    key: key!,
    ca: ca!,
    clientCertAuth: p.values["peer-tls-no-client-auth"] !== true,
    ...(name === undefined ? {} : { serverName: name }),
  };
}

/** The ClusterNode options of the command line (the server's options already parsed). */
export function clusterOptionsOf(
  p: Parsed,
  dataDir: string,
  server: KvServerOptions & { host: string; port: number },
): Omit<ClusterNodeOptions, "onEvent" | "onStoreEvent" | "onPeerEvent"> {
  const name = stringOption(p, "name");
  if (name === undefined) throw new UsageError("cluster mode needs --name");
  const state = stringOption(p, "initial-cluster-state") ?? "new";
  if (state !== "new" && state !== "existing") {
    throw new UsageError(`--initial-cluster-state must be new or existing, got '${state}'`);
  }
  if (p.values["no-sync"] === true) {
    throw new UsageError(
      "--no-sync is for single-node stores: a cluster member's store always runs unsynced behind its synced Raft log",
    );
  }
  if (server.transport === "grpc-js") {
    throw new UsageError(
      "cluster mode serves on the lean transport only (drop --transport grpc-js)",
    );
  }
  const wildcard = ["0.0.0.0", "::", ""].includes(bareHost(server.host));
  const advertise = stringOption(p, "advertise-client-address");
  if (wildcard && advertise === undefined) {
    throw new UsageError(
      `--host ${server.host} listens on every interface: give --advertise-client-address HOST:PORT for the cluster`,
    );
  }
  const out: Omit<ClusterNodeOptions, "onEvent" | "onStoreEvent" | "onPeerEvent"> = {
    dataDir,
    name,
    initialCluster: stringOption(p, "initial-cluster")!,
    initialClusterState: state,
    server,
  };
  const token = stringOption(p, "initial-cluster-token");
  if (token !== undefined) out.initialClusterToken = token;
  const peerPort = intOption(p, "peer-port", 1, 65535);
  if (peerPort !== undefined) out.peerPort = peerPort;
  const peerHost = stringOption(p, "peer-host");
  if (peerHost !== undefined) out.peerHost = peerHost;
  if (advertise !== undefined) out.advertiseClientAddress = advertise;
  const tls = peerTls(p);
  if (tls !== undefined) out.peerTls = tls;
  const tick = intOption(p, "tick-ms", 1, 60_000);
  if (tick !== undefined) out.tickMs = tick;
  const election = intOption(p, "election-ticks", 2, 10_000);
  if (election !== undefined) out.electionTicks = election;
  const snapshotEntries = intOption(p, "snapshot-entries", 1, Number.MAX_SAFE_INTEGER);
  if (snapshotEntries !== undefined) out.snapshotEntries = snapshotEntries;
  const catchUp = intOption(p, "catch-up-entries", 0, Number.MAX_SAFE_INTEGER);
  if (catchUp !== undefined) out.catchUpEntries = catchUp;
  const join = intOption(p, "join-timeout-ms", 0, 3_600_000);
  if (join !== undefined) out.joinTimeoutMs = join;
  if (p.values["upgrade-revisions"] === true) out.upgradeRevisions = true;
  const corruptCheck = intOption(p, "corrupt-check-interval-ms", 0, 86_400_000);
  if (corruptCheck !== undefined) out.corruptCheckMs = corruptCheck;
  const initialSnapshot = stringOption(p, "initial-snapshot");
  if (initialSnapshot !== undefined) {
    if (out.initialClusterState === "existing")
      throw new UsageError(
        "--initial-snapshot starts a new cluster: not with --initial-cluster-state existing",
      );
    out.initialSnapshot = resolve(initialSnapshot);
  }
  const overrides = stringOption(p, "peer-dial-override");
  if (overrides !== undefined) out.dialOverrides = parseDialOverrides(overrides);
  return out;
}

/** A free TCP port on `host` (bound, then released): for --port 0 in cluster mode. */
export async function freePort(host: string): Promise<number> {
  const s = netServer();
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(0, bareHost(host), () => resolve());
  });
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Event listeners of a member process: log lines and metrics. */
export function clusterListeners(
  logger: Logger,
  metrics: KvMetrics | undefined,
): {
  cluster: ClusterMetrics | undefined;
  onEvent: (e: ReplicationEvent) => void;
  onPeerEvent: (e: PeerTransportEvent) => void;
} {
  const cluster = metrics === undefined ? undefined : new ClusterMetrics(metrics.registry);
  if (cluster !== undefined) metrics?.scrapeHooks.push(cluster.beforeScrape);
  const log = clusterEventLogger(logger);
  return {
    cluster,
    onEvent: (e) => {
      log(e);
      cluster?.onEvent(e);
    },
    onPeerEvent: (e) => {
      switch (e.type) {
        case "peer-rtt":
          cluster?.observePeerRtt(formatMemberId(e.to), e.ms);
          break;
        case "peer-connected":
          logger.info(
            { event: "peer-connected", peer: formatMemberId(e.to), address: e.address },
            "peer connected",
          );
          break;
        case "peer-disconnected":
          logger.info(
            { event: "peer-disconnected", peer: formatMemberId(e.to), reason: e.reason },
            "peer connection lost",
          );
          break;
        case "peer-refused":
          logger.warn(
            { event: "peer-refused-us", peer: formatMemberId(e.to), code: e.code, err: e.message },
            "a peer refused this member's messages",
          );
          break;
        case "peer-call-refused":
          break;
      }
    },
  };
}

/** The listening line (see the module comment). */
export function listeningLine(node: ClusterNode): string {
  return (
    `kv-engine listening on ${node.server.address} peer ${node.peerAddress} ` +
    `name ${node.store.name} member ${formatMemberId(node.store.memberId)} ` +
    `cluster ${formatMemberId(node.store.clusterId)}`
  );
}
