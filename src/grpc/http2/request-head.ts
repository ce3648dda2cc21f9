/**
 * The request pseudo-header fields and the regular fields of a request's header block,
 * checked against HTTP/2's rules for requests (RFC 9113, 8.2 and 8.3): a block that breaks
 * them is malformed (the stream is reset with PROTOCOL_ERROR).
 *
 * - Field names are lowercase tokens; values hold no NUL, CR or LF.
 * - Pseudo-header fields come first, each at most once, only :method, :scheme, :path and
 *   :authority (no :status, no :protocol); :method, :scheme and a non-empty :path are
 *   required (this server does not serve CONNECT).
 * - No connection-specific fields (connection, keep-alive, proxy-connection,
 *   transfer-encoding, upgrade); `te` only with the value "trailers".
 */
export interface RequestHead {
  method: string;
  scheme: string;
  path: string;
  authority: string | undefined;
  /** The regular fields, as alternating lowercase names and values. */
  fields: string[];
}

const TOKEN = /^[a-z0-9!#$%&'*+\-.^_`|~]+$/;
const BAD_VALUE = /[\0\r\n]/;
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);

/** Names already checked (a connection's table makes clients repeat the same strings). */
const goodNames = new Set<string>();
const GOOD_NAMES_LIMIT = 4096;

/** The request's head, or a string saying why the block is malformed. */
export function parseRequestHead(block: readonly string[]): RequestHead | string {
  let method: string | undefined;
  let scheme: string | undefined;
  let path: string | undefined;
  let authority: string | undefined;
  const fields: string[] = [];
  let regular = false;
  for (let i = 0; i < block.length; i += 2) {
    const name = block[i]!;
    const value = block[i + 1]!;
    if (value.length > 0 && BAD_VALUE.test(value)) return `field ${name} holds NUL, CR or LF`;
    if (name.charCodeAt(0) === 0x3a) {
      if (regular) return `pseudo-header ${name} after a regular field`;
      switch (name) {
        case ":method":
          if (method !== undefined) return "duplicate :method";
          method = value;
          break;
        case ":scheme":
          if (scheme !== undefined) return "duplicate :scheme";
          scheme = value;
          break;
        case ":path":
          if (path !== undefined) return "duplicate :path";
          path = value;
          break;
        case ":authority":
          if (authority !== undefined) return "duplicate :authority";
          authority = value;
          break;
        default:
          return `pseudo-header ${name} not allowed in a request`;
      }
      continue;
    }
    regular = true;
    if (!goodNames.has(name)) {
      if (!TOKEN.test(name)) return `field name ${JSON.stringify(name)} is not a lowercase token`;
      if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field ${name}`;
      if (goodNames.size < GOOD_NAMES_LIMIT) goodNames.add(name);
    }
    if (name === "te" && value !== "trailers") return `te: ${value} (only "trailers" is allowed)`;
    fields.push(name, value);
  }
  if (method === undefined || scheme === undefined || path === undefined) {
    return "missing :method, :scheme or :path";
  }
  if (path.length === 0) return "empty :path";
  return { method, scheme, path, authority, fields };
}
