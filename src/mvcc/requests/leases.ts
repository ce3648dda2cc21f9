/**
 * What the request semantics need of the leases (etcd's lessor): whether one exists, and
 * to be told which keys name which lease (the lessor's attached-keys index).
 */
export interface LeaseLookup {
  /** True iff lease `id` (not 0) is granted and not yet expired or revoked. */
  exists(id: bigint): boolean;
  /** Key `key`'s new latest version names lease `id` (not 0). */
  attach(id: bigint, key: Uint8Array): void;
  /** Key `key`'s latest version named lease `id` (not 0) and no longer does. */
  detach(id: bigint, key: Uint8Array): void;
}

/** The lessor of a store without leases: none exists. */
export const NO_LEASES: LeaseLookup = { exists: () => false, attach: () => {}, detach: () => {} };
