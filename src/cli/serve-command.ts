/**
 * `kv-engine serve`: opens (creating if needed) the store in --data-dir, serves it over
 * gRPC, and prints exactly one line on stdout once calls are accepted:
 * `kv-engine listening on HOST:PORT` (with --port 0, the port chosen).
 *
 * On SIGINT or SIGTERM: stop accepting, give calls in flight up to --shutdown-grace-ms
 * (5000) to finish, cancel the rest, close the store (log synced, lock released) and
 * exit 0. Exit 1 when the store cannot be opened or the address cannot be bound.
 */
import { open } from "../db/kv-store.js";
import {
  DEFAULT_HOST,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  KvServer,
  type KvServerOptions,
} from "../server/kv-server.js";
import { DEFAULT_LIMITS, type ServerLimits } from "../server/limits.js";
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

const KIB = 1024;

export const SERVE_USAGE = `Usage: kv-engine serve --data-dir DIR [options]

Serves the store in DIR (created if missing) over gRPC (service kv.v1.KvService, plus
health and reflection). Prints "kv-engine listening on HOST:PORT" once it accepts calls.
SIGINT/SIGTERM: stop accepting, let calls finish (grace period), close the store, exit 0.

Options:
  --data-dir DIR             data directory (required)
  --host HOST                interface to listen on (default ${DEFAULT_HOST})
  --port PORT                TCP port; 0 picks a free one (default ${DEFAULT_PORT})
  --tls-cert FILE            serve TLS with this PEM certificate chain (needs --tls-key)
  --tls-key FILE             PEM private key of --tls-cert
  --tls-client-ca FILE       require client certificates signed by this PEM CA (mutual TLS)
  --auth-token-file FILE     require "authorization: Bearer <token>" (token = file contents)
  --no-sync                  acknowledge writes before they are synced to disk (faster;
                             a power loss can lose acknowledged writes)
  --max-key-bytes N          largest key (default ${DEFAULT_LIMITS.maxKeyBytes})
  --max-value-bytes N        largest value (default ${DEFAULT_LIMITS.maxValueBytes})
  --max-message-bytes N      largest request message (default ${DEFAULT_LIMITS.maxReceiveMessageBytes})
  --max-streams N            concurrent calls per connection (default ${DEFAULT_LIMITS.maxConcurrentStreams})
  --scan-batch-bytes N       target bytes per scan response (default ${DEFAULT_LIMITS.scanBatchBytes})
  --shutdown-grace-ms N      time calls get to finish at shutdown (default ${DEFAULT_SHUTDOWN_GRACE_MS})
  -h, --help                 print this help
`;

const OPTIONS = {
  "data-dir": { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-client-ca": { type: "string" },
  "auth-token-file": { type: "string" },
  "no-sync": { type: "boolean" },
  "max-key-bytes": { type: "string" },
  "max-value-bytes": { type: "string" },
  "max-message-bytes": { type: "string" },
  "max-streams": { type: "string" },
  "scan-batch-bytes": { type: "string" },
  "shutdown-grace-ms": { type: "string" },
} as const;

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
  const out: KvServerOptions = {
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
  const stop = nextStopSignal();
  const store = await open(dir, { sync: p.values["no-sync"] !== true });
  let server: KvServer;
  try {
    server = await KvServer.start(store, options);
  } catch (err) {
    await store.close().catch(() => {});
    throw err;
  }
  process.stdout.write(`kv-engine listening on ${server.address}\n`);
  const signal = await stop;
  process.stderr.write(`kv-engine: ${signal} received, shutting down\n`);
  await server.shutdown(grace);
  await store.close();
  return EXIT_OK;
}

export function serveCommand(argv: string[]): Promise<number> {
  return runCommand("serve", SERVE_USAGE, argv, OPTIONS, serve);
}
