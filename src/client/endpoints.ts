/**
 * Endpoint addresses, one syntax for the client and every command (docs/tools.md,
 * "Addresses"): `HOST:PORT`, `http://HOST:PORT` (plaintext) or `https://HOST:PORT` (TLS),
 * as etcdctl takes them; HOST is a name, an IPv4 address or an IPv6 address in brackets
 * (`[::1]:50051`), PORT 1-65535. Several are separated by commas, or given as an array.
 * Anything else (no port, another scheme, a path) is refused with a TypeError naming the
 * expected form, before any connection is made.
 */

/** The expected form, as error messages name it. */
export const ADDRESS_FORM =
  "HOST:PORT, http://HOST:PORT or https://HOST:PORT (e.g. 127.0.0.1:50051)";

export interface Endpoint {
  /** "host:port" (IPv6 hosts in brackets), what the transport dials. */
  address: string;
  /** The scheme given, or undefined for the bare form. */
  scheme: "http" | "https" | undefined;
}

function refuse(text: string, why: string): never {
  throw new TypeError(`bad address '${text}': ${why}; expected ${ADDRESS_FORM}`);
}

/** One address in the syntax above; throws a TypeError saying what is wrong with it. */
export function parseEndpoint(text: string): Endpoint {
  let rest = text;
  let scheme: Endpoint["scheme"];
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(rest);
  if (m !== null) {
    const s = m[1]!.toLowerCase();
    if (s !== "http" && s !== "https") refuse(text, `the scheme '${m[1]}' is not taken`);
    scheme = s;
    rest = rest.slice(m[0].length);
    if (rest.endsWith("/")) rest = rest.slice(0, -1);
  }
  if (rest.includes("/")) refuse(text, "an address has no path");
  let host: string;
  let port: string | undefined;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) refuse(text, "an IPv6 address's '[' is not closed");
    host = rest.slice(0, close + 1);
    const after = rest.slice(close + 1);
    if (after !== "" && !after.startsWith(":")) refuse(text, `'${after}' after the host`);
    port = after === "" ? undefined : after.slice(1);
  } else {
    const colons = rest.split(":").length - 1;
    if (colons > 1) refuse(text, "an IPv6 address goes in brackets, as in [::1]:50051");
    const i = rest.indexOf(":");
    host = i < 0 ? rest : rest.slice(0, i);
    port = i < 0 ? undefined : rest.slice(i + 1);
  }
  if (host === "" || host === "[]") refuse(text, "no host");
  if (/\s/.test(host)) refuse(text, "a host has no spaces");
  if (port === undefined || port === "") refuse(text, "no port");
  const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : Number.NaN;
  if (!(n >= 1 && n <= 65535)) refuse(text, `the port '${port}' is not a number from 1 to 65535`);
  return { address: `${host}:${n}`, scheme };
}

/**
 * Splits "h1:p1,h2:p2" (or an array of such) into its endpoints, each checked, duplicates
 * dropped. Throws a TypeError when there is none, when one is malformed, or when the
 * list mixes http:// and https://.
 */
export function parseEndpointList(address: string | readonly string[]): Endpoint[] {
  const texts = (typeof address === "string" ? [address] : [...address])
    .flatMap((a) => a.split(","))
    .map((a) => a.trim())
    .filter((a) => a !== "");
  if (texts.length === 0) throw new TypeError(`no address given; expected ${ADDRESS_FORM}`);
  const out: Endpoint[] = [];
  for (const text of texts) {
    const e = parseEndpoint(text);
    if (!out.some((o) => o.address === e.address)) out.push(e);
  }
  const schemes = new Set(out.map((e) => e.scheme).filter((s) => s !== undefined));
  if (schemes.size > 1) {
    throw new TypeError("the addresses mix http:// and https://: give all members one scheme");
  }
  return out;
}

/** The "host:port" of each endpoint of parseEndpointList(address). */
export function parseEndpoints(address: string | readonly string[]): string[] {
  return parseEndpointList(address).map((e) => e.address);
}

/**
 * Whether the endpoints ask for TLS: true for https://, false for http://, undefined when
 * no scheme was given (the client's options decide).
 */
export function schemeTls(endpoints: readonly Endpoint[]): boolean | undefined {
  const scheme = endpoints.find((e) => e.scheme !== undefined)?.scheme;
  return scheme === undefined ? undefined : scheme === "https";
}
