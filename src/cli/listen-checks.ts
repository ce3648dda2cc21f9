/**
 * Checks `kv-engine serve` makes about where it listens: that a port can be bound before
 * the store is opened (so a busy port fails at once, in one line), and whether the
 * address reaches beyond loopback without TLS or a token (which deserves a warning).
 */
import { lookup } from "node:dns/promises";
import { isIPv4, isIPv6, createServer as netServer } from "node:net";

/** `host` without the brackets of an IPv6 literal ("[::1]" -> "::1"). */
export function bareHost(host: string): string {
  return host.replace(/^\[|\]$/g, "");
}

/** True iff `address` (an IP literal) is a loopback address: 127.0.0.0/8, ::1, ::ffff:127.x. */
export function isLoopbackAddress(address: string): boolean {
  const a = bareHost(address).toLowerCase();
  if (isIPv4(a)) return a.startsWith("127.");
  if (!isIPv6(a)) return false;
  // The URL parser writes an IPv6 address in its shortest form, IPv4-mapped ones in hex.
  const short = new URL(`http://[${a}]`).hostname.slice(1, -1);
  return short === "::1" || short.startsWith("::ffff:7f");
}

/**
 * True iff every address `host` stands for is a loopback address: an IP literal, or a
 * name whose every address (dns lookup, /etc/hosts included) is. A name that does not
 * resolve is not loopback (binding it fails anyway).
 */
export async function isLoopbackHost(host: string): Promise<boolean> {
  const h = bareHost(host);
  if (isIPv4(h) || isIPv6(h)) return isLoopbackAddress(h);
  try {
    const addresses = await lookup(h, { all: true });
    return addresses.length > 0 && addresses.every((a) => isLoopbackAddress(a.address));
  } catch {
    return false;
  }
}

/**
 * The warning for a server listening on `address`, beyond loopback, without TLS or
 * without a token; undefined when it has both. (Loopback needs no warning: ask
 * `isLoopbackHost` first.)
 */
export function exposureWarning(address: string, tls: boolean, token: boolean): string | undefined {
  if (tls && token) return undefined;
  const missing = [tls ? undefined : "TLS", token ? undefined : "an auth token"]
    .filter((x) => x !== undefined)
    .join(" and without ");
  const risk = tls
    ? "anyone who can reach it can read and write the store"
    : token
      ? "the token and every key and value cross the network in clear text"
      : "anyone who can reach it can read and write the store, and the traffic is clear text";
  const fix = [
    tls ? undefined : "--tls-cert/--tls-key",
    token ? undefined : "--auth-token-file",
  ].filter((x) => x !== undefined);
  return (
    `listening on ${address}, beyond loopback, without ${missing}: ${risk}; ` +
    `use ${fix.join(" and ")}, or --host 127.0.0.1`
  );
}

/** One line saying why `host:port` (given by `option`) cannot be listened on. */
export function listenFailure(err: unknown, host: string, port: number, option: string): string {
  const code = (err as { code?: unknown }).code;
  const text = err instanceof Error ? err.message : String(err);
  const has = (c: string) => code === c || text.includes(c);
  const where = `cannot listen on ${host}:${port} (${option})`;
  if (has("EADDRINUSE")) {
    return `${where}: the port is in use (another kv-engine serve?); choose another ${option}, or 0 for a free one`;
  }
  if (has("EACCES")) return `${where}: permission denied (ports below 1024 need privileges)`;
  if (has("EADDRNOTAVAIL")) return `${where}: no interface of this machine has that address`;
  if (has("ENOTFOUND") || has("EAI_AGAIN")) return `${where}: unknown host ${host}`;
  return `${where}: ${text}`;
}

/**
 * Resolves once `host:port` could be bound (and released again); rejects with an Error
 * holding `listenFailure`'s line otherwise. Port 0 is not checked (any free port does).
 * Another process may still take the port before the server binds it: the server's own
 * bind failure is reported with the same line.
 */
export async function checkCanListen(host: string, port: number, option: string): Promise<void> {
  if (port === 0) return;
  const probe = netServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err) => reject(new Error(listenFailure(err, host, port, option))));
    probe.listen({ host: bareHost(host), port, exclusive: true }, () =>
      probe.close(() => resolve()),
    );
  });
}
