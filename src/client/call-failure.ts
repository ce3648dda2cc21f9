/**
 * A failed grpc-js call as a KvClientError in the client's own words: what happened,
 * whether a write may have been applied, what to do. grpc-js's texts ("No connection
 * established. Last error: ... Resolution note:", "Deadline exceeded after ...,Waiting for
 * LB pick", "Received message larger than max (A vs. B)") are recognized here, at the
 * client's edge, and never shown; they decide `failure` (see CallFailure), which the
 * retry policy reads. A status the server sent keeps its text in `details`; the account
 * (`text`) is the server's text, except where the client says more: an unknown outcome,
 * a service the port does not serve, a size limit and the option that raises it.
 *
 * Patterns are those of @grpc/grpc-js 1.14 (test/client/call-failure.test.ts drives each
 * through real connections, so an upgrade that changes them fails there).
 */
import { status } from "@grpc/grpc-js";
import { GrpcCallError, type TransportFailure } from "../grpc/grpc-client.js";
import {
  type CallFailure,
  ERROR_CODE_TRAILER,
  KvClientError,
  LEADER_TRAILER,
} from "./kv-client-error.js";

/** What the caller knows of the call that failed. */
export interface CallContext {
  /** The endpoint called. */
  endpoint?: string | undefined;
  /** The method's path, "/kv.v1.KvService/Put". */
  path?: string | undefined;
  /** Whether the call is a write (changes state) or a read. */
  kind?: "read" | "write" | "session-write" | "open-session" | undefined;
  /** Bytes of the serialized request message, when known. */
  requestBytes?: number | undefined;
  /** The attempt's deadline, in milliseconds from its start (undefined: none). */
  timeoutMs?: number | undefined;
}

/** What to do about a deadline, for people. */
const MORE_TIME = "allow more time (timeoutMs; the CLI's --timeout-ms)";
/** What a write whose outcome is unknown calls for. */
const CHECK_FIRST =
  "it may or may not take effect: read to check before retrying (never retry a compare-and-swap blindly)";

/** The server's `limit name` in its size refusals (src/server/request-checks.ts), and the flag raising it. */
const SERVER_LIMIT_FLAGS: Readonly<Record<string, string>> = {
  maxKeyBytes: "--max-key-bytes",
  maxValueBytes: "--max-value-bytes",
  maxEntryBytes: "--max-message-bytes",
};

function trailer(err: object, key: string): string | undefined {
  if (!("metadata" in err)) return undefined;
  const md = err.metadata as { get?: (k: string) => unknown[] } | undefined;
  const v = md?.get?.(key)?.[0];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** A call error of either transport (or anything thrown) as a KvClientError. */
export function toClientError(err: unknown, context: CallContext = {}): KvClientError {
  if (err instanceof KvClientError) return err;
  const endpoint = context.endpoint;
  let code: status;
  let details: string;
  let account: Account | undefined;
  if (err instanceof GrpcCallError) {
    // The lean transport: a failure on this side says what it is; the rest are answers.
    code = err.code;
    details = err.details;
    account = err.transport === undefined ? undefined : leanFailure(err.transport, context);
  } else if (
    typeof err === "object" &&
    err !== null &&
    "code" in err &&
    typeof err.code === "number"
  ) {
    code = err.code as status;
    details = "details" in err && typeof err.details === "string" ? err.details : "";
    account = grpcJsFailure(code, details, context);
  } else {
    const text = err instanceof Error ? err.message : String(err);
    return new KvClientError(status.UNKNOWN, text, { cause: err, endpoint });
  }
  if (account !== undefined) {
    return new KvClientError(code, account.text, { cause: err, endpoint, ...account });
  }
  const serverCode = trailer(err, ERROR_CODE_TRAILER);
  return new KvClientError(code, details, {
    cause: err,
    serverCode,
    leaderHint: trailer(err, LEADER_TRAILER),
    endpoint,
    text: answerText(code, details, serverCode, context),
  });
}

/** How a failure found on this side is told: its kind, and the account for people. */
interface Account {
  failure: CallFailure;
  text: string;
}

/** The accounts both transports give, by what happened. */
const account = {
  cannotConnect: (reason: string): Account => ({
    failure: "no-connection",
    text: `cannot connect: ${reason}; nothing was sent`,
  }),
  lost: (write: boolean): Account => ({
    failure: "lost",
    text: `the connection was lost before an answer${write ? `: the write was sent; ${CHECK_FIRST}` : ""}`,
  }),
  noConnectionWithin: (within: string): Account => ({
    failure: "no-connection",
    text: `no connection within the deadline${within}; nothing was sent; ${MORE_TIME}`,
  }),
  deadline: (write: boolean, within: string): Account => ({
    failure: "deadline",
    text: write
      ? `no answer within the deadline${within}: the write was sent; ${CHECK_FIRST}; or ${MORE_TIME}`
      : `no answer within the deadline${within}; ${MORE_TIME}`,
  }),
  cancelled: (): Account => ({
    failure: "lost",
    text: "the call was cancelled on this side (the client was closed)",
  }),
  badAnswer: (why: string): Account => ({
    failure: "lost",
    text: `the answer does not decode${why}: is this a kv-engine server?`,
  }),
  httpStatus: (http: string | number | undefined): Account => ({
    failure: "no-connection",
    text: `the port answered HTTP status ${http}, not gRPC: is this a kv-engine client port?`,
  }),
};

const isWrite = (context: CallContext): boolean =>
  context.kind === "write" || context.kind === "session-write";
const withinOf = (context: CallContext): string =>
  context.timeoutMs === undefined ? "" : ` (${context.timeoutMs} ms)`;

/** The account of a status grpc-js made itself, or undefined for the server's. */
function grpcJsFailure(code: status, details: string, context: CallContext): Account | undefined {
  if (code === status.UNAVAILABLE) {
    const noConnection =
      /^(?:\w+: )?No connection established(?:\. Last error: ([\s\S]*)\. Resolution note: [\s\S]*)?$/.exec(
        details,
      );
    if (noConnection !== null) return account.cannotConnect(connectReason(noConnection[1]));
    if (/^Name resolution failed|^No addresses resolved/.test(details)) {
      return account.cannotConnect("the host name does not resolve");
    }
    if (
      /^Connection dropped$|^Received RST_STREAM|^No status information received$/.test(details)
    ) {
      return account.lost(isWrite(context));
    }
    return undefined;
  }
  if (code === status.DEADLINE_EXCEEDED && /^Deadline exceeded/.test(details)) {
    if (/before the call started/.test(details)) return undefined; // the server's
    if (
      !/remote_addr=/.test(details) &&
      /Waiting for LB pick|waiting for name resolution|waiting for metadata filters/.test(details)
    ) {
      return account.noConnectionWithin(withinOf(context));
    }
    return account.deadline(isWrite(context), withinOf(context));
  }
  if (code === status.CANCELLED && /^Cancelled on client$|^Channel closed/.test(details)) {
    return account.cancelled();
  }
  if (code === status.INTERNAL && /^Response message parsing error/.test(details)) {
    return account.badAnswer("");
  }
  const http = /^Received HTTP status code (\d+)/.exec(details);
  if (http !== null) return account.httpStatus(http[1]);
  return undefined;
}

/** The account of a failure the lean transport found (src/grpc/grpc-client.ts). */
function leanFailure(t: TransportFailure, context: CallContext): Account {
  switch (t.kind) {
    case "no-connection":
      return account.cannotConnect(connectReason(t.why));
    case "not-http2":
      return account.cannotConnect(connectReason("Protocol error"));
    case "closed-early":
      return account.cannotConnect(connectReason("Failed to connect"));
    case "not-taken":
      return {
        failure: "no-connection",
        text: "the member was shutting down and did not take the call; nothing was done",
      };
    case "lost":
      return account.lost(isWrite(context));
    case "deadline":
      return t.sent === true
        ? account.deadline(isWrite(context), withinOf(context))
        : account.noConnectionWithin(withinOf(context));
    case "cancelled":
      return account.cancelled();
    case "too-large":
      return { failure: "answered", text: answerTooLarge(t.size, t.limit) };
    case "http-status":
      return account.httpStatus(t.httpStatus);
    case "bad-answer":
      return account.badAnswer(` (${t.why})`);
  }
}

/** Why a connection could not be made, from grpc-js's "Last error" (a Node error's text). */
function connectReason(last: string | undefined): string {
  if (last === undefined) return "no connection to the endpoint";
  if (/ECONNREFUSED/.test(last)) return "connection refused (is kv-engine running there?)";
  if (/ETIMEDOUT/.test(last)) return "the connection timed out";
  if (/EHOSTUNREACH|ENETUNREACH/.test(last)) return "the host is unreachable";
  if (/ENOTFOUND|EAI_AGAIN/.test(last)) return "the host name does not resolve";
  if (/ECONNRESET/.test(last)) return "the connection was reset";
  if (/wrong version number|packet length too long|unknown protocol/.test(last)) {
    return "the TLS handshake failed: the port does not speak TLS (connect without TLS: drop --tls/--tls-ca, or use http://)";
  }
  const names = /is not in the cert's (?:altnames|list): (.*)$/.exec(last.trim());
  if (/ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/.test(last)) {
    return (
      "the server's TLS certificate is not for this host" +
      (names === null ? "" : ` (it names ${names[1]})`) +
      ": connect by a name it holds, or name the one to check (tls.serverName; --tls-server-name)"
    );
  }
  if (
    /unable to verify|self[- ]signed|unable to get (?:local )?issuer|certificate has expired|not yet valid/.test(
      last,
    )
  ) {
    return `the server's TLS certificate is not trusted (${cleanNodeError(last)}): give its CA (tls.ca; --tls-ca)`;
  }
  if (/certificate required|alert|handshake failure/.test(last)) {
    return "the server refused the TLS handshake (it may require a client certificate: tls.cert and tls.key; --tls-cert and --tls-key)";
  }
  if (/^Protocol error/.test(last))
    return "the port does not speak HTTP/2 (is this a kv-engine client port?)";
  if (/^Failed to connect/.test(last)) {
    return "the connection closed before HTTP/2 started (a TLS port? connect with TLS: --tls or --tls-ca, or https://)";
  }
  return cleanNodeError(last);
}

/** A Node error's text without its "Error: " / "Error [CODE]: " prefix and grpc-js's timestamps. */
function cleanNodeError(text: string): string {
  return text
    .replace(/^Error(?: \[[A-Z_]+\])?: /, "")
    .replace(/ \(\d{4}-\d\d-\d\dT[\d:.]+Z\)/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** The account of a status the server sent (or of an answer this client refused). */
function answerText(
  code: status,
  details: string,
  serverCode: string | undefined,
  context: CallContext,
): string {
  if (serverCode === "OUTCOME_UNKNOWN") {
    return (
      "the write was proposed but not applied when the member answered (its deadline was near, " +
      `the leader changed, or the member stopped): ${CHECK_FIRST}; or ${MORE_TIME}`
    );
  }
  if (code === status.UNIMPLEMENTED) return unservedText(context.path);
  const big = /^Received message larger than max \((\d+) vs\.? (\d+)\)/.exec(details);
  if (code === status.RESOURCE_EXHAUSTED && big !== null) {
    const [, size, limit] = big;
    if (context.requestBytes !== undefined && Number(size) === context.requestBytes) {
      return (
        `the request (${size} bytes) is over the server's limit of ${limit} bytes for a request ` +
        "message: nothing was done; send less (split a batch), or raise the server's --max-message-bytes"
      );
    }
    return answerTooLarge(size, limit);
  }
  const limit = /\((max[A-Za-z]+Bytes)\)$/.exec(details);
  const flag = limit === null ? undefined : SERVER_LIMIT_FLAGS[limit[1]!];
  if (code === status.RESOURCE_EXHAUSTED && flag !== undefined) {
    return `${details}: nothing was stored; send less, or raise the server's ${flag}`;
  }
  return details === "" ? "(no message)" : details;
}

/** An answer over this client's limit, and the option that raises it. */
function answerTooLarge(
  size: number | string | undefined,
  limit: number | string | undefined,
): string {
  return (
    `the answer (${size} bytes) is over this client's limit of ${limit} bytes: raise it ` +
    "(maxReceiveMessageBytes; the CLI's --max-receive-bytes)"
  );
}

/** What an UNIMPLEMENTED answer to a call of `path` means. */
function unservedText(path: string | undefined): string {
  const service = /^\/([^/]+)\//.exec(path ?? "")?.[1];
  switch (service) {
    case "kv.v1.KvService":
      return "not a kv-engine client port (it may be a cluster member's peer port): it does not serve kv.v1.KvService";
    case "kv.v1.ClusterService":
      return (
        "serves no cluster service: a single-node server (cluster calls go to a member started " +
        "with --initial-cluster), or not a kv-engine client port (a peer port?)"
      );
    case "kv.v1.AdminService":
      return (
        "serves no admin service: not a kv-engine client port (a peer port?), or a server " +
        "embedded without one (use the offline command)"
      );
    default:
      return `does not serve ${path ?? "this call"}`;
  }
}
