/**
 * How a command reaches a server: --addr (one syntax everywhere: HOST:PORT[,HOST:PORT...],
 * or http:// and https:// addresses, as src/client/endpoints.ts parses them; anything else
 * is a usage error naming the expected form), the deadline, TLS, the bearer token and the
 * largest answer accepted. Used by the client, cluster and admin commands alike.
 */
import { type Endpoint, parseEndpointList, schemeTls } from "../client/endpoints.js";
import { DEFAULT_MAX_RECEIVE_BYTES, KvClient, type KvClientOptions } from "../client/kv-client.js";
import {
  fileOption,
  intOption,
  type Parsed,
  stringOption,
  tokenOption,
  UsageError,
} from "./command.js";

export const DEFAULT_ADDR = "127.0.0.1:50051";
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The flags that say how to reach a server (clientOptions reads them). */
export const CONNECTION_OPTIONS = {
  addr: { type: "string" },
  "timeout-ms": { type: "string" },
  tls: { type: "boolean" },
  "tls-ca": { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-server-name": { type: "string" },
  "auth-token-file": { type: "string" },
  "max-receive-bytes": { type: "string" },
} as const;

/** Usage lines of CONNECTION_OPTIONS for the client and cluster commands. */
export const CLIENT_CONNECTION_USAGE = `Connection options:
  --addr ADDRS              the server, or a comma list of a cluster's members:
                            HOST:PORT[,HOST:PORT...], or http://HOST:PORT, https://HOST:PORT
                            (https: TLS); default ${DEFAULT_ADDR}
  --timeout-ms N            deadline of the call (default ${DEFAULT_TIMEOUT_MS})
  --tls                     connect with TLS, trusting the system's CAs
  --tls-ca FILE             connect with TLS, trusting this PEM CA
  --tls-cert FILE           client certificate (PEM) for mutual TLS (needs --tls-key)
  --tls-key FILE            private key (PEM) of --tls-cert
  --tls-server-name NAME    name to check the server certificate against
  --auth-token-file FILE    send "authorization: Bearer <token>" (token = file contents)
  --max-receive-bytes N     largest answer accepted (default ${DEFAULT_MAX_RECEIVE_BYTES})
`;

/** Usage lines of CONNECTION_OPTIONS, for the commands that have an online form. */
export const CONNECTION_USAGE = `Online form (--addr): the command runs on a server through its admin service
  --addr ADDRS              the server, or a cluster's members (HOST:PORT[,HOST:PORT...]):
                            with several, it runs on the leader; the output names the member
  --timeout-ms N            deadline of the call (default: none for backup and compact)
  --tls, --tls-ca FILE, --tls-cert FILE, --tls-key FILE, --tls-server-name NAME
                            TLS, as for kv-engine get (kv-engine get --help)
  --auth-token-file FILE    send "authorization: Bearer <token>" (token = file contents)
  --max-receive-bytes N     largest answer accepted (default ${DEFAULT_MAX_RECEIVE_BYTES})
`;

function endpoints(p: Parsed): Endpoint[] {
  try {
    return parseEndpointList(stringOption(p, "addr") ?? DEFAULT_ADDR);
  } catch (err) {
    throw new UsageError(`--addr: ${(err as Error).message}`);
  }
}

/**
 * The addresses of --addr (default DEFAULT_ADDR), "host:port" each, checked; a malformed
 * list is a UsageError naming the expected form. (clientOptions turns TLS on for
 * https:// addresses.)
 */
export function addresses(p: Parsed): string[] {
  return endpoints(p).map((e) => e.address);
}

/** The client options of the connection flags and of --addr's scheme (https://: TLS). */
export function clientOptions(p: Parsed): KvClientOptions {
  const out: KvClientOptions = {
    timeoutMs: intOption(p, "timeout-ms", 1, 86_400_000) ?? DEFAULT_TIMEOUT_MS,
  };
  const maxReceive = intOption(p, "max-receive-bytes", 1024, 2 ** 31 - 1);
  if (maxReceive !== undefined) out.maxReceiveMessageBytes = maxReceive;
  const ca = fileOption(p, "tls-ca");
  const cert = fileOption(p, "tls-cert");
  const key = fileOption(p, "tls-key");
  const serverName = stringOption(p, "tls-server-name");
  if ((cert === undefined) !== (key === undefined)) {
    throw new UsageError("--tls-cert and --tls-key go together");
  }
  const flags = p.values.tls === true || ca !== undefined || cert !== undefined;
  const scheme = schemeTls(endpoints(p));
  if (scheme === false && flags) {
    throw new UsageError("--addr has http:// addresses and TLS flags: use https://, or no scheme");
  }
  if (flags || scheme === true) {
    out.tls = {};
    if (ca !== undefined) out.tls.ca = ca;
    if (cert !== undefined) out.tls.cert = cert;
    if (key !== undefined) out.tls.key = key;
    if (serverName !== undefined) out.tls.serverName = serverName;
  } else if (serverName !== undefined) {
    throw new UsageError("--tls-server-name needs TLS (--tls, --tls-ca, or https:// addresses)");
  }
  const token = tokenOption(p, "auth-token-file");
  if (token !== undefined) out.authToken = token;
  quietIpServerNameWarning();
  return out;
}

/** A KvClient of `addrs` (default: --addr's) with the connection flags' options. */
export function kvClient(p: Parsed, addrs?: readonly string[]): KvClient {
  return new KvClient(addrs ?? addresses(p), clientOptions(p));
}

let warningFiltered = false;

/**
 * Node prints a deprecation warning (DEP0123) when TLS is used to an IP address, for which
 * grpc-js sets the TLS server name; it is neither ours nor something a user can act on,
 * so the command hides that one warning (others still print).
 */
function quietIpServerNameWarning(): void {
  if (warningFiltered) return;
  warningFiltered = true;
  const print = process.listeners("warning");
  process.removeAllListeners("warning");
  process.on("warning", (w: Error & { code?: string }) => {
    if (w.code === "DEP0123") return;
    for (const listener of print) listener(w);
  });
}
