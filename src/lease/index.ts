/** etcd's leases (issue 30): the replicated lease table, its requests and the primary's clock. */

export {
  grantToPropose,
  keepAliveResponse,
  leasesResponse,
  timeToLiveResponse,
} from "./lease-answers.js";
export { LeaseIdGenerator, minLeaseTtl, SINGLE_NODE_MIN_TTL } from "./lease-ids.js";
export { LEASE_PREFIX, LEASE_TIME_KEY, leaseKey } from "./lease-records.js";
export {
  type LeaseRequest,
  type LeaseResponse,
  type LeaseRun,
  type LeaseTick,
  type LeaseTickResult,
  MAX_LEASE_TTL,
  MAX_REVOKES_PER_TICK,
  runLeaseRequest,
} from "./lease-requests.js";
export { type Lease, type LeaseSource, LeaseTable } from "./lease-table.js";
export {
  Lessor,
  type LessorOptions,
  MAX_TICK_STEP_MS,
  TICK_INTERVAL_MS,
  ttlSeconds,
} from "./lessor.js";
