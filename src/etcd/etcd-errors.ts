/**
 * etcd's errors as its clients see them: the gRPC status code and the exact message text
 * (etcd 3.4's v3rpc/rpctypes/error.go), since clientv3, the etcd3 npm client and
 * python-etcd3 map several errors by their text. Every error the etcd services send is
 * in ETCD_ERRORS (docs/etcd.md has the table); `etcdStatusOf` picks one for whatever a
 * request failed with.
 */
import { type ErrorCode, isKvError } from "../errors.js";
import { GrpcError, Status } from "../grpc/status.js";
import { isRequestError, type RequestErrorReason } from "../mvcc/requests/request-error.js";

export interface EtcdErrorSpec {
  readonly code: number;
  readonly message: string;
}

const e = (code: number, message: string): EtcdErrorSpec => ({ code, message });

/** etcd's errors by its names (rpctypes.ErrGRPC...). */
export const ETCD_ERRORS = {
  EMPTY_KEY: e(Status.INVALID_ARGUMENT, "etcdserver: key is not provided"),
  KEY_NOT_FOUND: e(Status.INVALID_ARGUMENT, "etcdserver: key not found"),
  VALUE_PROVIDED: e(Status.INVALID_ARGUMENT, "etcdserver: value is provided"),
  LEASE_PROVIDED: e(Status.INVALID_ARGUMENT, "etcdserver: lease is provided"),
  TOO_MANY_OPS: e(Status.INVALID_ARGUMENT, "etcdserver: too many operations in txn request"),
  DUPLICATE_KEY: e(Status.INVALID_ARGUMENT, "etcdserver: duplicate key given in txn request"),
  COMPACTED: e(Status.OUT_OF_RANGE, "etcdserver: mvcc: required revision has been compacted"),
  FUTURE_REV: e(Status.OUT_OF_RANGE, "etcdserver: mvcc: required revision is a future revision"),
  NO_SPACE: e(Status.RESOURCE_EXHAUSTED, "etcdserver: mvcc: database space exceeded"),
  LEASE_NOT_FOUND: e(Status.NOT_FOUND, "etcdserver: requested lease not found"),
  LEASE_EXIST: e(Status.FAILED_PRECONDITION, "etcdserver: lease already exists"),
  LEASE_TTL_TOO_LARGE: e(Status.OUT_OF_RANGE, "etcdserver: too large lease TTL"),
  REQUEST_TOO_LARGE: e(Status.INVALID_ARGUMENT, "etcdserver: request is too large"),
  TOO_MANY_REQUESTS: e(Status.RESOURCE_EXHAUSTED, "etcdserver: too many requests"),
  NO_LEADER: e(Status.UNAVAILABLE, "etcdserver: no leader"),
  NOT_LEADER: e(Status.FAILED_PRECONDITION, "etcdserver: not leader"),
  LEADER_CHANGED: e(Status.UNAVAILABLE, "etcdserver: leader changed"),
  STOPPED: e(Status.UNAVAILABLE, "etcdserver: server stopped"),
  TIMEOUT: e(Status.UNAVAILABLE, "etcdserver: request timed out"),
  CORRUPT: e(Status.DATA_LOSS, "etcdserver: corrupt cluster"),
  // Cluster and Maintenance (cluster-service.ts, maintenance-service.ts).
  PEER_URL_EXIST: e(Status.FAILED_PRECONDITION, "etcdserver: Peer URLs already exists"),
  MEMBER_BAD_URLS: e(Status.INVALID_ARGUMENT, "etcdserver: given member URLs are invalid"),
  MEMBER_NOT_FOUND: e(Status.NOT_FOUND, "etcdserver: member not found"),
  MEMBER_NOT_LEARNER: e(
    Status.FAILED_PRECONDITION,
    "etcdserver: can only promote a learner member",
  ),
  LEARNER_NOT_READY: e(
    Status.FAILED_PRECONDITION,
    "etcdserver: can only promote a learner member which is in sync with leader",
  ),
  TOO_MANY_LEARNERS: e(
    Status.FAILED_PRECONDITION,
    "etcdserver: too many learner members in cluster",
  ),
  BAD_LEADER_TRANSFEREE: e(Status.FAILED_PRECONDITION, "etcdserver: bad leader transferee"),
} as const satisfies Record<string, EtcdErrorSpec>;

export type EtcdErrorName = keyof typeof ETCD_ERRORS;

/**
 * An error a backend (or the service) throws to answer with etcd's error `name`, e.g.
 * NO_LEADER when a member knows no leader, TIMEOUT when a proposal's outcome is unknown.
 */
export class EtcdError extends Error {
  override readonly name = "EtcdError";
  constructor(
    readonly etcdName: EtcdErrorName,
    options?: { cause?: unknown },
  ) {
    super(ETCD_ERRORS[etcdName].message, options);
  }
}

const BY_REASON: Readonly<Record<RequestErrorReason, EtcdErrorName>> = {
  EMPTY_KEY: "EMPTY_KEY",
  KEY_NOT_FOUND: "KEY_NOT_FOUND",
  VALUE_PROVIDED: "VALUE_PROVIDED",
  LEASE_PROVIDED: "LEASE_PROVIDED",
  TOO_MANY_OPS: "TOO_MANY_OPS",
  DUPLICATE_KEY: "DUPLICATE_KEY",
  LEASE_NOT_FOUND: "LEASE_NOT_FOUND",
  LEASE_EXISTS: "LEASE_EXIST",
  LEASE_TTL_TOO_LARGE: "LEASE_TTL_TOO_LARGE",
};

/**
 * The etcd error of each engine error code a KV request can meet (the rest are answered
 * with their own text under etcd's Unknown code, as etcd answers errors it has no name
 * for): UNAVAILABLE (no leader known, or a read not confirmed) is etcd's "no leader",
 * OUTCOME_UNKNOWN its "request timed out", CLOSED "server stopped".
 */
const BY_CODE: Partial<Record<ErrorCode, EtcdErrorName>> = {
  COMPACTED: "COMPACTED",
  FUTURE_REVISION: "FUTURE_REV",
  NO_SPACE: "NO_SPACE",
  UNAVAILABLE: "NO_LEADER",
  OUTCOME_UNKNOWN: "TIMEOUT",
  RESOURCE_EXHAUSTED: "TOO_MANY_REQUESTS",
  CLOSED: "STOPPED",
  CORRUPTION: "CORRUPT",
};

/** The status etcd would answer `err` with. */
export function etcdStatusOf(err: unknown): EtcdErrorSpec {
  if (err instanceof GrpcError) return { code: err.code, message: err.message };
  if (err instanceof EtcdError) return ETCD_ERRORS[err.etcdName];
  if (isRequestError(err)) return ETCD_ERRORS[BY_REASON[err.reason]];
  if (isKvError(err)) {
    if (err.code === "ABORTED") return e(Status.CANCELLED, "context canceled");
    // Ours, not etcd's (a store without revisions, a removed member): our words.
    if (err.code === "FAILED_PRECONDITION") return e(Status.FAILED_PRECONDITION, err.message);
    const name = BY_CODE[err.code];
    if (name !== undefined) return ETCD_ERRORS[name];
  }
  return e(Status.UNKNOWN, err instanceof Error ? err.message : String(err));
}

/** `err` as the GrpcError the service throws (etcdStatusOf). */
export function toEtcdGrpcError(err: unknown): GrpcError {
  if (err instanceof GrpcError) return err;
  const { code, message } = etcdStatusOf(err);
  return new GrpcError(code, message);
}

/**
 * `err` as etcd's v3lock and v3election servers answer it: they run their recipes through
 * a client of their own, whose errors (etcd's named ones included) reach the caller as
 * UNKNOWN with their text; a cancelled call stays CANCELLED.
 */
export function toRecipeGrpcError(err: unknown): GrpcError {
  const { code, message } = etcdStatusOf(err);
  return new GrpcError(code === Status.CANCELLED ? code : Status.UNKNOWN, message);
}
