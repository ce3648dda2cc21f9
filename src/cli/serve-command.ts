/**
 * `kv-engine serve`: opens (creating if needed) the store in --data-dir, serves it over
 * gRPC, and prints exactly one line on stdout once calls are accepted:
 * `kv-engine listening on HOST:PORT` (with --port 0, the port chosen).
 *
 * On SIGINT or SIGTERM: stop accepting, give calls in flight up to --shutdown-grace-ms
 * (5000) to finish, cancel the rest, close the store (log synced, lock released) and
 * exit 0. Exit 1 when the store cannot be opened or the address cannot be bound.
 *
 * Logs (pino, JSON lines) go to stderr: one line per store event (open, flush, compaction,
 * stall, failure), at --log-level (default info); nothing per request. With
 * --metrics-port, Prometheus metrics are served at http://HOST:PORT/metrics.
 *
 * The ports are checked before the store is opened: one busy (or not ours to bind) fails
 * with one line on stderr, exit 1. Listening beyond loopback without TLS or without a
 * token is allowed but warned about: a log line at warn level and a line on stderr.
 */
import { statSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import { resolve } from "node:path";
import { type Logger, pino } from "pino";
import type { StoreEvent } from "../db/events.js";
import { open } from "../db/kv-store.js";
import { AlarmSet } from "../etcd/alarms.js";
import { type AutoCompactionPolicy, parseAutoCompaction } from "../etcd/auto-compaction.js";
import { registerEtcdElection } from "../etcd/election-service.js";
import {
  ETCD_FLAG_OPTIONS,
  ETCD_FLAG_USAGE,
  type EtcdServiceOptions,
  etcdFlagValues,
} from "../etcd/etcd-flags.js";
import { registerEtcdKv } from "../etcd/kv-service.js";
import { registerEtcdLease } from "../etcd/lease-service.js";
import { LocalEtcdMaintenance } from "../etcd/local-maintenance.js";
import { registerEtcdLock } from "../etcd/lock-service.js";
import { registerEtcdMaintenanceServices, storeBytes } from "../etcd/maintenance-service.js";
import { QuotaGuardedBackend, QuotaGuardedLease } from "../etcd/quota.js";
import { grantingFrom } from "../etcd/recipes/recipe-backend.js";
import { registerEtcdWatch } from "../etcd/watch-service.js";
import { eventLogger } from "../observability/event-log.js";
import { KvMetrics } from "../observability/metrics.js";
import {
  DEFAULT_HOST,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  KvServer,
  type KvServerOptions,
  type ServerTransportName,
  TRANSPORTS,
} from "../server/kv-server.js";
import { DEFAULT_LIMITS, type ServerLimits } from "../server/limits.js";
import {
  CLUSTER_OPTIONS,
  CLUSTER_USAGE,
  clusterListeners,
  clusterOptionsOf,
  freePort,
  isClusterMode,
  listeningLine,
} from "./cluster-serve.js";
import {
  EXIT_OK,
  fileOption,
  intOption,
  type Parsed,
  runCommand,
  stringOption,
  tokenOption,
  UsageError,
} from "./command.js";
import { checkCanListen, exposureWarning, isLoopbackHost, listenFailure } from "./listen-checks.js";
import { type SingleNodeApi, singleNodeApi } from "./single-node-api.js";

const KIB = 1024;
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export const SERVE_USAGE = `Usage: kv-engine serve --data-dir DIR [options]

Serves the store in DIR (created if missing) over gRPC (service kv.v1.KvService, the admin
service kv.v1.AdminService, health and reflection). Prints "kv-engine listening on HOST:PORT" once it accepts calls.
SIGINT/SIGTERM: stop accepting, let calls finish (grace period), close the store, exit 0.

Options:
  --data-dir DIR             data directory (required)
  --host HOST                interface to listen on (default ${DEFAULT_HOST})
  --port PORT                TCP port; 0 picks a free one (default ${DEFAULT_PORT})
  --transport NAME           gRPC server: lean (default; KV Engine's own HTTP/2) or
                             grpc-js (the @grpc/grpc-js server, kept to compare)
  --tls-cert FILE            serve TLS with this PEM certificate chain (needs --tls-key)
  --tls-key FILE             PEM private key of --tls-cert
  --tls-client-ca FILE       require client certificates signed by this PEM CA (mutual TLS)
  --auth-token-file FILE     require "authorization: Bearer <token>" (token = file contents)
  --backup-dir DIR           an existing directory the admin service may write
                             checkpoints under (kv-engine backup --addr); without
                             it online backups are refused
  --no-sync                  acknowledge writes before they are synced to disk (faster;
                             a power loss can lose acknowledged writes)
  --max-key-bytes N          largest key (default ${DEFAULT_LIMITS.maxKeyBytes})
  --max-value-bytes N        largest value (default ${DEFAULT_LIMITS.maxValueBytes})
  --max-message-bytes N      largest request message (default ${DEFAULT_LIMITS.maxReceiveMessageBytes})
  --max-streams N            concurrent calls per connection (default ${DEFAULT_LIMITS.maxConcurrentStreams})
  --scan-batch-bytes N       target bytes per scan response (default ${DEFAULT_LIMITS.scanBatchBytes})
  --shutdown-grace-ms N      time calls get to finish at shutdown (default ${DEFAULT_SHUTDOWN_GRACE_MS})
  --metrics-port PORT        serve Prometheus metrics on http://HOST:PORT/metrics
                             (HOST as --host; 0 picks a free port, printed on stderr)
  --log-level LEVEL          ${LOG_LEVELS.join(", ")} (default info); logs go to stderr
  -h, --help                 print this help

etcd's v3 KV API (docs/etcd.md) is served on the same port, over the same keys as kv.v1:
${ETCD_FLAG_USAGE}
  --auto-compaction-mode M   periodic (default) or revision, as etcd's
  --auto-compaction-retention R
                             periodic: a duration (1h, 30m) or hours; revision: a count
                             of revisions; 0 (default) turns auto-compaction off

${CLUSTER_USAGE}`;

const OPTIONS = {
  "data-dir": { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  transport: { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-client-ca": { type: "string" },
  "auth-token-file": { type: "string" },
  "backup-dir": { type: "string" },
  "no-sync": { type: "boolean" },
  "max-key-bytes": { type: "string" },
  "max-value-bytes": { type: "string" },
  "max-message-bytes": { type: "string" },
  "max-streams": { type: "string" },
  "scan-batch-bytes": { type: "string" },
  "shutdown-grace-ms": { type: "string" },
  "metrics-port": { type: "string" },
  "log-level": { type: "string" },
  ...ETCD_FLAG_OPTIONS,
  "auto-compaction-mode": { type: "string" },
  "auto-compaction-retention": { type: "string" },
  ...CLUSTER_OPTIONS,
} as const;

/** The etcd API's options: the service's limits and the auto-compaction policy. */
/** `{ [key]: v }`, or nothing when v is undefined. */
function optional<K extends string, V>(key: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: V };
}

function etcdOptionsOf(p: Parsed): {
  service: EtcdServiceOptions;
  autoCompaction: AutoCompactionPolicy | undefined;
} {
  try {
    return {
      service: etcdFlagValues(p.values),
      autoCompaction: parseAutoCompaction(
        stringOption(p, "auto-compaction-mode") ?? "periodic",
        stringOption(p, "auto-compaction-retention") ?? "0",
      ),
    };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const MAX_BYTES = 2 * KIB * KIB * KIB - 1;

function limitsOf(p: Parsed): Partial<ServerLimits> {
  const out: Partial<ServerLimits> = {};
  const set = (name: string, key: keyof ServerLimits) => {
    const v = intOption(p, name, 1, MAX_BYTES);
    if (v !== undefined) out[key] = v;
  };
  set("max-key-bytes", "maxKeyBytes");
  set("max-value-bytes", "maxValueBytes");
  set("max-message-bytes", "maxReceiveMessageBytes");
  set("max-streams", "maxConcurrentStreams");
  set("scan-batch-bytes", "scanBatchBytes");
  return out;
}

function serverOptions(p: Parsed): KvServerOptions {
  const transport = stringOption(p, "transport") ?? "lean";
  if (!(TRANSPORTS as readonly string[]).includes(transport)) {
    throw new UsageError(`--transport must be one of ${TRANSPORTS.join(", ")}, got '${transport}'`);
  }
  const out: KvServerOptions = {
    transport: transport as ServerTransportName,
    host: stringOption(p, "host") ?? DEFAULT_HOST,
    port: intOption(p, "port", 0, 65535) ?? DEFAULT_PORT,
    limits: limitsOf(p),
  };
  const cert = fileOption(p, "tls-cert");
  const key = fileOption(p, "tls-key");
  const clientCa = fileOption(p, "tls-client-ca");
  if ((cert === undefined) !== (key === undefined)) {
    throw new UsageError("--tls-cert and --tls-key go together");
  }
  if (clientCa !== undefined && cert === undefined) {
    throw new UsageError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (cert !== undefined && key !== undefined) {
    out.tls = clientCa === undefined ? { cert, key } : { cert, key, clientCa };
  }
  const token = tokenOption(p, "auth-token-file");
  if (token !== undefined) out.authToken = token;
  const backupDir = stringOption(p, "backup-dir");
  if (backupDir !== undefined) {
    let isDir = false;
    try {
      isDir = statSync(backupDir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) throw new UsageError(`--backup-dir ${backupDir} is not an existing directory`);
    out.backupDir = resolve(backupDir);
  }
  return out;
}

/** Resolves with the name of the first SIGINT or SIGTERM received. */
function nextStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => resolve(signal);
    // Handlers stay installed: a second signal during shutdown must not kill the process
    // before the store is closed (shutdown is bounded by the grace period).
    process.on("SIGINT", on);
    process.on("SIGTERM", on);
  });
}

async function serve(p: Parsed): Promise<number> {
  if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
  const dir = stringOption(p, "data-dir");
  if (dir === undefined || dir.length === 0) throw new UsageError("--data-dir is required");
  const options = serverOptions(p);
  const grace = intOption(p, "shutdown-grace-ms", 0, 3_600_000) ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const metricsPort = intOption(p, "metrics-port", 0, 65535);
  const level = stringOption(p, "log-level") ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got '${level}'`);
  }
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_PORT;
  const cluster = isClusterMode(p);
  const etcd = etcdOptionsOf(p);
  await checkCanListen(host, port, "--port");
  if (metricsPort !== undefined) await checkCanListen(host, metricsPort, "--metrics-port");
  const logger = pino({ level, base: { dir } }, pino.destination({ fd: 2, sync: true }));
  const metrics = metricsPort === undefined ? undefined : new KvMetrics();
  if (cluster) {
    return serveCluster(
      p,
      dir,
      { ...options, host, port },
      { grace, metricsPort, logger, metrics },
      etcd,
    );
  }
  const logEvent = eventLogger(logger);
  const onEvent = (event: StoreEvent) => {
    logEvent(event);
    metrics?.onEvent(event);
  };
  const stop = nextStopSignal();
  const store = await open(dir, { sync: p.values["no-sync"] !== true, onEvent });
  let server: KvServer | undefined;
  let http: HttpServer | undefined;
  let api: SingleNodeApi | undefined;
  try {
    api = await singleNodeApi(store, dir, etcd.autoCompaction, compactionLogger(logger));
    const etcdBackend = api.etcd;
    if (!api.revisioned) {
      logger.warn(
        { event: "no-revisions" },
        "the store predates revisions: etcd's API is refused (kv-engine upgrade copies it)",
      );
    }
    if (metrics !== undefined) {
      metrics.store = store;
      options.onCall = metrics.onCall;
    }
    options.admin = store;
    if (options.transport === "grpc-js") {
      logger.warn(
        { event: "etcd-api-off" },
        "etcd's API is served on the lean transport only: not served with --transport grpc-js",
      );
    } else {
      const watch = api.watch;
      const mvcc = api.mvcc;
      const alarms = new AlarmSet();
      const maintenance = new LocalEtcdMaintenance({
        clientAddress: () => server?.address ?? `${host}:${port}`,
        clientScheme: options.tls === undefined ? "http" : "https",
        admin: store,
        mvcc: () => mvcc,
        alarms,
      });
      const guarded = new QuotaGuardedBackend(etcdBackend, {
        ...optional("quotaBytes", etcd.service.quotaBackendBytes),
        size: () => storeBytes(store),
        alarms,
        memberId: () => 0n,
      });
      const lease = api.lease === undefined ? undefined : new QuotaGuardedLease(api.lease, guarded);
      options.registerServices = (grpc) => {
        registerEtcdKv(grpc, guarded, etcd.service);
        if (lease !== undefined) registerEtcdLease(grpc, lease);
        if (watch !== undefined) {
          registerEtcdWatch(grpc, watch, etcd.service);
          const recipes = { kv: guarded, watch, ...grantingFrom(lease) };
          registerEtcdLock(grpc, recipes);
          registerEtcdElection(grpc, recipes, etcd.service);
        }
        registerEtcdMaintenanceServices(grpc, maintenance);
      };
    }
    server = await KvServer.start(api.kv, options).catch((err: unknown) => {
      throw new Error(listenFailure(err, host, port, "--port"), { cause: err });
    });
    if (metrics !== undefined) {
      metrics.server = server;
      http = await serveMetrics(metrics, host, metricsPort ?? 0).catch((err: unknown) => {
        throw new Error(listenFailure(err, host, metricsPort ?? 0, "--metrics-port"), {
          cause: err,
        });
      });
      const bound = http.address();
      const port = typeof bound === "object" && bound !== null ? bound.port : metricsPort;
      logger.info({ event: "metrics", port }, `metrics on port ${port}`);
    }
  } catch (err) {
    await server?.shutdown(0).catch(() => {});
    await api?.close().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }
  process.stdout.write(`kv-engine listening on ${server.address}\n`);
  logger.info({ event: "listening", address: server.address }, "accepting calls");
  if (!(await isLoopbackHost(host))) {
    const tls = options.tls !== undefined;
    const token = options.authToken !== undefined;
    const warning = exposureWarning(server.address, tls, token);
    if (warning !== undefined) {
      logger.warn({ event: "exposed", address: server.address, tls, authToken: token }, warning);
      process.stderr.write(`kv-engine serve: warning: ${warning}\n`);
    }
  }
  const signal = await stop;
  logger.info({ event: "shutdown", signal }, "shutting down");
  process.stderr.write(`kv-engine: ${signal} received, shutting down\n`);
  await server.shutdown(grace);
  await new Promise<void>((resolve) =>
    http === undefined ? resolve() : http.close(() => resolve()),
  );
  await api.close();
  await store.close();
  logger.info({ event: "closed" }, "store closed");
  return EXIT_OK;
}

interface ProcessParts {
  grace: number;
  metricsPort: number | undefined;
  logger: Logger;
  metrics: KvMetrics | undefined;
}

/** Cluster mode (cluster-serve.ts): a ClusterNode instead of a store and a server. */
async function serveCluster(
  p: Parsed,
  dir: string,
  server: KvServerOptions & { host: string; port: number },
  { grace, metricsPort, logger, metrics }: ProcessParts,
  etcd: ReturnType<typeof etcdOptionsOf>,
): Promise<number> {
  const host = server.host;
  if (server.port === 0) server.port = await freePort(host);
  const o = clusterOptionsOf(p, dir, server);
  if (o.peerPort !== undefined) await checkCanListen(o.peerHost ?? host, o.peerPort, "--peer-port");
  const logEvent = eventLogger(logger);
  const listeners = clusterListeners(logger, metrics);
  if (metrics !== undefined) server.onCall = metrics.onCall;
  const stop = nextStopSignal();
  const { ClusterNode } = await import("../cluster/cluster-node.js");
  const node = await ClusterNode.start({
    ...o,
    etcd: etcd.service,
    ...(etcd.autoCompaction === undefined ? {} : { autoCompaction: etcd.autoCompaction }),
    onAutoCompaction: compactionLogger(logger),
    onCorruption: (found) =>
      logger.error(
        { event: "corruption", ...found },
        "this member's HashKV differs from the leader's: CORRUPT alarm raised",
      ),
    onEvent: listeners.onEvent,
    onPeerEvent: listeners.onPeerEvent,
    onStoreEvent: (event: StoreEvent) => {
      logEvent(event);
      metrics?.onEvent(event);
    },
  });
  let http: HttpServer | undefined;
  try {
    if (metrics !== undefined) {
      metrics.store = node.store;
      metrics.server = node.server;
      if (listeners.cluster !== undefined) listeners.cluster.source = node.store;
      http = await serveMetrics(metrics, host, metricsPort ?? 0).catch((err: unknown) => {
        throw new Error(listenFailure(err, host, metricsPort ?? 0, "--metrics-port"), {
          cause: err,
        });
      });
      const bound = http.address();
      const port = typeof bound === "object" && bound !== null ? bound.port : metricsPort;
      logger.info({ event: "metrics", port }, `metrics on port ${port}`);
    }
  } catch (err) {
    await node.stop(0).catch(() => {});
    throw err;
  }
  process.stdout.write(`${listeningLine(node)}\n`);
  logger.info(
    {
      event: "listening",
      address: node.server.address,
      peerAddress: node.peerAddress,
      member: node.store.memberId.toString(16),
      cluster: node.store.clusterId.toString(16),
    },
    "accepting calls",
  );
  if (!(await isLoopbackHost(host))) {
    const warning = exposureWarning(
      node.server.address,
      server.tls !== undefined,
      server.authToken !== undefined,
    );
    if (warning !== undefined) {
      logger.warn({ event: "exposed", address: node.server.address }, warning);
      process.stderr.write(`kv-engine serve: warning: ${warning}\n`);
    }
  }
  const signal = await stop;
  logger.info({ event: "shutdown", signal }, "shutting down");
  process.stderr.write(`kv-engine: ${signal} received, shutting down\n`);
  const handOff = await node.handOff();
  logger.info({ event: "hand-off", result: handOff }, handOff);
  await node.stop(grace);
  await new Promise<void>((resolve) =>
    http === undefined ? resolve() : http.close(() => resolve()),
  );
  logger.info({ event: "closed" }, "member closed");
  return EXIT_OK;
}

/** Logs each auto-compaction's outcome. */
function compactionLogger(logger: Logger): (revision: number, error: unknown) => void {
  return (revision, error) => {
    if (error === undefined) {
      logger.info({ event: "auto-compaction", revision }, `compacted to revision ${revision}`);
    } else {
      logger.warn(
        { event: "auto-compaction", revision, error: (error as Error).message },
        `auto-compaction to revision ${revision} failed`,
      );
    }
  };
}

/** An HTTP server answering GET /metrics with the text exposition; 404 otherwise. */
async function serveMetrics(metrics: KvMetrics, host: string, port: number): Promise<HttpServer> {
  const http = createServer((req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
      res.writeHead(404).end("not found: GET /metrics\n");
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { "content-type": metrics.contentType }).end(text),
      (err: unknown) => res.writeHead(500).end(`metrics failed: ${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host.replace(/^\[|\]$/g, ""), () => {
      http.off("error", reject);
      resolve();
    });
  });
  return http;
}

export function serveCommand(argv: string[]): Promise<number> {
  // A server keeps serving when the reader of its stdout goes away (its one line is out).
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
  });
  return runCommand("serve", SERVE_USAGE, argv, OPTIONS, serve);
}
