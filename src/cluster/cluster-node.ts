/**
 * ClusterNode: one member of a kv-engine cluster as `kv-engine serve --initial-cluster ...`
 * runs it (docs/cluster.md): its peer transport on the peer port, its ReplicatedStore in
 * the data directory, and a KvServer on the client port serving kv.v1.KvService (every
 * call accepted, writes forwarded through Raft, reads linearizable unless serializable)
 * and kv.v1.ClusterService, with health SERVING iff the member knows a leader and was not
 * removed (and did not fail).
 *
 * Start order: the peer port listens first (peers may call at once: they are told
 * UNAVAILABLE until the store runs), then the store opens (a member started with
 * `initialClusterState: "existing"` and no identity yet first asks the other members who
 * it is: Discover, retried until `joinTimeoutMs`), then the client port.
 *
 * Stop (`stop`, e.g. on SIGTERM): a leader first hands leadership to the most caught-up
 * voter (bounded by two election timeouts), then the server shuts down gracefully, then
 * the store closes (its transport with it).
 */

import { create } from "@bufbuild/protobuf";
import { KvError } from "../errors.js";
import { type AutoCompactionPolicy, AutoCompactionRunner } from "../etcd/auto-compaction.js";
import { registerEtcdElection } from "../etcd/election-service.js";
import type { EtcdServiceOptions } from "../etcd/etcd-flags.js";
import { registerEtcdKv } from "../etcd/kv-service.js";
import { registerEtcdLease } from "../etcd/lease-service.js";
import { registerEtcdLock } from "../etcd/lock-service.js";
import { registerEtcdMaintenanceServices, storeBytes } from "../etcd/maintenance-service.js";
import { QuotaGuardedBackend, QuotaGuardedLease } from "../etcd/quota.js";
import { grantingFrom } from "../etcd/recipes/recipe-backend.js";
import { withUnpackedSnapshot } from "../etcd/snapshot-archive.js";
import { WatchHub } from "../etcd/watch-hub.js";
import { type EtcdWatchServiceOptions, registerEtcdWatch } from "../etcd/watch-service.js";
import { CLUSTER_SERVICE_NAME } from "../proto/cluster-service-definition.js";
import { CompactionRequestSchema } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { RaftLogger } from "../raft/logger.js";
import type { ReplicationEvent, ReplicationEventListener } from "../replication/events.js";
import { parseInitialCluster } from "../replication/identity.js";
import { formatMemberId, type MemberId } from "../replication/members.js";
import type { ReplicatedStoreOptions } from "../replication/options.js";
import { ReplicatedStore } from "../replication/replicated-store.js";
import { KvServer, type KvServerOptions } from "../server/kv-server.js";
import { CLUSTER_MEMBER_FILE } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import { joinPath } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { clusterService, clusterServiceHandlers } from "./cluster-service.js";
import { CorruptionCheck, type CorruptionFound } from "./corruption-check.js";
import { ReplicatedEtcdAlarms } from "./etcd-alarms.js";
import { ReplicatedEtcdBackend } from "./etcd-backend.js";
import { ReplicatedEtcdMaintenance } from "./etcd-maintenance-backend.js";
import type { PeerTlsOptions } from "./peer-call.js";
import type { PeerTransportEventListener } from "./peer-events.js";
import { type Discovered, GrpcPeerTransport } from "./peer-transport.js";

/** Milliseconds before the call's deadline at which the store stops waiting (call-deadline.ts). */
export const CLUSTER_DEADLINE_MARGIN_MS = 100;

export interface ClusterNodeOptions {
  dataDir: string;
  /** `--name`. */
  name: string;
  /** `--initial-cluster n1=H1:PP1,...` (this member's entry is its advertised peer address). */
  initialCluster: string;
  initialClusterState?: "new" | "existing";
  initialClusterToken?: string;
  /** The client port's server (host, port, TLS, token, limits); its port must not be 0. */
  server: KvServerOptions & { host: string; port: number };
  /** The client address published to the cluster. Default `server.host:server.port`. */
  advertiseClientAddress?: string;
  /** Interface the peer port listens on. Default: `server.host`. */
  peerHost?: string;
  /** The peer port. Default: the port of this member's --initial-cluster entry. */
  peerPort?: number;
  peerTls?: PeerTlsOptions;
  /**
   * A new cluster's initial data: a file etcd's Maintenance.Snapshot streamed (`etcdctl
   * snapshot save`), unpacked into the member's store when the cluster is bootstrapped
   * (ReplicatedStoreOptions.initialData). Give every initial member the same file.
   */
  initialSnapshot?: string;
  /** Give a member store made before revisions them (ReplicatedStoreOptions.upgradeRevisions). */
  upgradeRevisions?: boolean;
  /** etcd's KV service on the client port (docs/etcd.md): its request limits and quota. */
  etcd?: EtcdServiceOptions;
  /** etcd's Watch service (docs/etcd.md): its progress interval and leader checks (default: etcd's). */
  watch?: EtcdWatchServiceOptions;
  /**
   * etcd's auto-compaction (`--auto-compaction-mode/-retention`): the leader compacts the
   * revisions through the log. Default: off, as in etcd.
   */
  autoCompaction?: AutoCompactionPolicy;
  /** Told of each auto-compaction's outcome (the CLI logs it). */
  onAutoCompaction?: (revision: number, error: unknown) => void;
  /**
   * etcd's corruption check (corruption-check.ts): the leader proposes its HashKV every
   * this many ms and a member that disagrees raises CORRUPT. Default 0: off, as etcd's.
   */
  corruptCheckMs?: number;
  /** Told when this member's check found its store differs from the leader's. */
  onCorruption?: (found: CorruptionFound) => void;
  /** Test hook: peer address -> address dialled instead (peer-transport.ts). */
  dialOverrides?: ReadonlyMap<string, string>;
  /** How long a joining member keeps asking for its IDs. Default 30,000 ms. */
  joinTimeoutMs?: number;
  /** Raft and store tuning (ReplicatedStoreOptions, docs/cluster.md "Timeouts"). */
  tickMs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
  snapshotEntries?: number;
  snapshotBytes?: number;
  catchUpEntries?: number;
  storeOptions?: NonNullable<ReplicatedStoreOptions["storeOptions"]>;
  fs?: FileSystem;
  onEvent?: ReplicationEventListener;
  onStoreEvent?: NonNullable<ReplicatedStoreOptions["onStoreEvent"]>;
  onPeerEvent?: PeerTransportEventListener;
  raftLogger?: RaftLogger;
  seed?: number;
}

/** The largest entry a member proposes, given the server's largest request message. */
export function maxEntryBytesFor(maxReceiveMessageBytes: number): number {
  return Math.max(1024, maxReceiveMessageBytes);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class ClusterNode {
  private stopping: Promise<void> | undefined;

  /** The auto-compaction, when configured. */
  private compactions: AutoCompactionRunner | undefined;

  /** The watchers of etcd's Watch service on this member. */
  watches: WatchHub | undefined;

  /** etcd's corruption check on this member (`propose` runs one round now, when leading). */
  corruption: CorruptionCheck | undefined;

  private constructor(
    readonly store: ReplicatedStore,
    readonly server: KvServer,
    readonly peers: GrpcPeerTransport,
    /** The client address published to the cluster. */
    readonly clientAddress: string,
    /** This member's advertised peer address. */
    readonly peerAddress: string,
  ) {}

  static async start(o: ClusterNodeOptions): Promise<ClusterNode> {
    const members = parseInitialCluster(o.initialCluster);
    const self = members.find((m) => m.name === o.name);
    if (self === undefined) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `--initial-cluster does not name this member (${o.name}): it must list ${o.name}=peerHost:peerPort`,
      );
    }
    const peerPort =
      o.peerPort ?? Number(self.peerAddress.slice(self.peerAddress.lastIndexOf(":") + 1));
    const serverOptions = o.server;
    if (serverOptions.port === 0)
      throw new KvError("INVALID_ARGUMENT", "a cluster member's client port must not be 0 here");
    const clientAddress =
      o.advertiseClientAddress ?? hostPort(serverOptions.host, serverOptions.port);
    const fs = o.fs ?? new RealFileSystem();
    const peers = await GrpcPeerTransport.listen({
      host: o.peerHost ?? serverOptions.host,
      port: peerPort,
      ...(o.peerTls === undefined ? {} : { tls: o.peerTls }),
      ...(o.dialOverrides === undefined ? {} : { dialOverrides: o.dialOverrides }),
      maxMessageBytes:
        maxEntryBytesFor(serverOptions.limits?.maxReceiveMessageBytes ?? 4 << 20) + (1 << 20),
      ...(o.onPeerEvent === undefined ? {} : { onEvent: o.onPeerEvent }),
    });
    let store: ReplicatedStore | undefined;
    let server: KvServer | undefined;
    let node: ClusterNode | undefined;
    let hub: WatchHub | undefined;
    let check: CorruptionCheck | undefined;
    const onEvent = (e: ReplicationEvent) => {
      o.onEvent?.(e);
      check?.onEvent(e);
      if (e.type === "leader" || e.type === "removed" || e.type === "failed") node?.updateHealth();
      if (e.type === "snapshot-installed") hub?.refresh();
    };
    try {
      const state = o.initialClusterState ?? "new";
      let join: { clusterId: number; memberId: MemberId } | undefined;
      let found: Discovered | undefined;
      const others = members.filter((m) => m.name !== o.name).map((m) => m.peerAddress);
      const me = { name: o.name, peerAddress: self.peerAddress };
      if (state === "existing" && !(await fs.exists(joinPath(o.dataDir, CLUSTER_MEMBER_FILE)))) {
        found = await discover(others, me, o);
        join = { clusterId: found.clusterId, memberId: found.memberId };
      }
      const fresh = state === "new" && !(await fs.exists(joinPath(o.dataDir, CLUSTER_MEMBER_FILE)));
      const open = (initialData: string | undefined) =>
        ReplicatedStore.open({
          ...(initialData === undefined ? {} : { initialData }),
          dataDir: o.dataDir,
          name: o.name,
          initialCluster: members,
          initialClusterState: state,
          ...(o.initialClusterToken === undefined
            ? {}
            : { initialClusterToken: o.initialClusterToken }),
          ...(join === undefined ? {} : { join }),
          clientAddress,
          transport: peers,
          fs,
          maxEntryBytes: maxEntryBytesFor(serverOptions.limits?.maxReceiveMessageBytes ?? 4 << 20),
          ...pick(o, [
            "tickMs",
            "electionTicks",
            "heartbeatTicks",
            "snapshotEntries",
            "snapshotBytes",
            "catchUpEntries",
            "storeOptions",
            "onStoreEvent",
            "raftLogger",
            "seed",
            "upgradeRevisions",
          ]),
          onEvent,
        });
      const snapshotFile = fresh ? o.initialSnapshot : undefined;
      store = await (snapshotFile === undefined
        ? open(undefined)
        : withUnpackedSnapshot(snapshotFile, open));
      const s = store;
      if (s.members().length === 0) {
        // A joined member that applied no membership yet: reach the others through what
        // Discover says until it does.
        found ??= await discover(others, me, o);
        peers.seedPeers(found.members);
      }
      peers.setDiscoverer((name, peerAddress) => {
        // A member added without a name (etcd's MemberAdd) is known by its peer address.
        const m = s
          .members()
          .find((x) => (x.name === name || x.name === "") && x.peerAddress === peerAddress);
        if (m === undefined) {
          throw new KvError(
            "FAILED_PRECONDITION",
            `the cluster has no member ${name} at ${peerAddress}: add it first (kv-engine cluster add ${name} --peer-address ${peerAddress})`,
          );
        }
        return {
          clusterId: s.clusterId,
          memberId: m.id,
          responderId: s.memberId,
          members: s.members().map((x) => ({ id: x.id, peerAddress: x.peerAddress })),
        };
      });
      const watches = new WatchHub(() => s.localMvcc());
      hub = watches;
      const watchBackend = {
        hub: watches,
        hasLeader: () => s.leader() !== undefined,
        ids: () => ({
          clusterId: BigInt(s.clusterId),
          memberId: BigInt(s.memberId),
          raftTerm: BigInt(s.term),
        }),
      };
      const handlers = clusterServiceHandlers(s, {
        rttMs: (id) => peers.stats().get(id)?.rttMs,
      });
      const alarms = new ReplicatedEtcdAlarms(s);
      check = new CorruptionCheck(s, alarms, o.onCorruption);
      const maintenance = new ReplicatedEtcdMaintenance(s, {
        peerScheme: o.peerTls === undefined ? "http" : "https",
        clientScheme: serverOptions.tls === undefined ? "http" : "https",
        alarms,
        fs,
      });
      const quota = o.etcd?.quotaBackendBytes;
      const replicated = new ReplicatedEtcdBackend(s);
      const etcdBackend = new QuotaGuardedBackend(replicated, {
        ...(quota === undefined ? {} : { quotaBytes: quota }),
        size: () => storeBytes(maintenance.admin),
        alarms,
        memberId: () => BigInt(s.memberId),
      });
      const lease = new QuotaGuardedLease(replicated, etcdBackend);
      server = await KvServer.start(s, {
        ...serverOptions,
        deadlineMarginMs: serverOptions.deadlineMarginMs ?? CLUSTER_DEADLINE_MARGIN_MS,
        registerServices: (grpc) => {
          grpc.addService(clusterService, handlers);
          registerEtcdKv(grpc, etcdBackend, o.etcd ?? {});
          registerEtcdWatch(grpc, watchBackend, { ...o.etcd, ...o.watch });
          registerEtcdMaintenanceServices(grpc, maintenance);
          registerEtcdLease(grpc, lease);
          const recipes = { kv: etcdBackend, watch: watchBackend, ...grantingFrom(lease) };
          registerEtcdLock(grpc, recipes);
          registerEtcdElection(grpc, recipes, o.etcd ?? {});
        },
        healthServices: [CLUSTER_SERVICE_NAME],
        serving: false,
        admin: s.admin(),
      });
      node = new ClusterNode(s, server, peers, clientAddress, self.peerAddress);
      node.watches = watches;
      node.corruption = check;
      check.start(o.corruptCheckMs ?? 0);
      node.updateHealth();
      if (o.autoCompaction !== undefined) {
        const onCompaction = o.onAutoCompaction;
        node.compactions = new AutoCompactionRunner(o.autoCompaction, {
          revision: () => s.revision,
          leads: () => s.status().role === "leader",
          compact: async (revision) => {
            await s.request({
              kind: "compact",
              request: create(CompactionRequestSchema, { revision: BigInt(revision) }),
            });
          },
          ...(onCompaction === undefined ? {} : { onCompaction }),
        });
      }
      return node;
    } catch (err) {
      hub?.close();
      await server?.shutdown(0).catch(() => {});
      if (store !== undefined) await store.close().catch(() => {});
      else await peers.close().catch(() => {});
      throw err;
    }
  }

  /** Health: SERVING iff a leader is known, this member was not removed and did not fail. */
  updateHealth(): void {
    const s = this.store.status();
    this.server.setServing(s.leader !== 0 && !s.removed && s.failure === undefined);
  }

  /**
   * Stops the member (see the module comment): resolves with what happened to
   * leadership ("transferred" to the member named, "not leader", or "failed: why").
   */
  stop(graceMs: number): Promise<void> {
    this.stopping ??= this.doStop(graceMs);
    return this.stopping;
  }

  /** Hands leadership away if this member leads; resolves with what happened. */
  async handOff(): Promise<string> {
    const s = this.store.status();
    if (s.role !== "leader") return "not the leader";
    try {
      await this.store.transferLeadership();
      const to = this.store.leader();
      return `leadership transferred to ${to?.name ?? "?"} (${formatMemberId(to?.id ?? 0)})`;
    } catch (err) {
      return `leadership not transferred: ${(err as Error).message}`;
    }
  }

  private async doStop(graceMs: number): Promise<void> {
    this.compactions?.stop();
    this.corruption?.stop();
    await this.server.shutdown(graceMs);
    this.watches?.close();
    await this.store.close();
  }
}

/** How long a joiner asks again after every member that answered said it knows no such member. */
const REFUSAL_RETRY_MS = 3000;

async function discover(
  addresses: string[],
  self: { name: string; peerAddress: string },
  o: ClusterNodeOptions,
): Promise<Discovered> {
  if (addresses.length === 0) {
    throw new KvError(
      "INVALID_ARGUMENT",
      "--initial-cluster-state existing needs the other members in --initial-cluster (as kv-engine cluster add prints it)",
    );
  }
  const start = Date.now();
  const until = start + (o.joinTimeoutMs ?? 30_000);
  for (let pause = 100; ; pause = Math.min(2000, pause * 2)) {
    try {
      return await GrpcPeerTransport.discover(addresses, self, {
        ...(o.peerTls === undefined ? {} : { tls: o.peerTls }),
        ...(o.dialOverrides === undefined ? {} : { dialOverrides: o.dialOverrides }),
      });
    } catch (err) {
      if (!(err instanceof KvError) || Date.now() + pause > until) throw err;
      // No member knows this one: asked again only briefly (those that answered may not
      // have applied its add yet), then the refusal stands.
      const retry =
        err.code === "UNAVAILABLE" ||
        (err.code === "FAILED_PRECONDITION" && Date.now() + pause - start <= REFUSAL_RETRY_MS);
      if (!retry) throw err;
    }
    await sleep(pause);
  }
}

function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function hostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}
