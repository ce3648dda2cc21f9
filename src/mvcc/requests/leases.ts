/** What the request semantics need of the leases (etcd's lessor): whether one exists. */
export interface LeaseLookup {
  /** True iff lease `id` (not 0) is granted and not yet expired or revoked. */
  exists(id: bigint): boolean;
}

/** The lessor of a store without leases (until part 3 of issue 28): none exists. */
export const NO_LEASES: LeaseLookup = { exists: () => false };
