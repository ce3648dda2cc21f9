/**
 * The command-line options of etcd's KV service, for `kv-engine serve` to add (the CLI
 * parses them with node:util parseArgs): --max-request-bytes, --max-txn-ops and
 * --quota-backend-bytes, with etcd's names and defaults.
 */
import { DEFAULT_MAX_TXN_OPS } from "../mvcc/requests/index.js";
import { DEFAULT_MAX_REQUEST_BYTES, type EtcdKvServiceOptions } from "./kv-service.js";
import { DEFAULT_QUOTA_BACKEND_BYTES } from "./quota.js";

/** The etcd services' options the command line sets. */
export interface EtcdServiceOptions extends EtcdKvServiceOptions {
  /** etcd's --quota-backend-bytes (quota.ts; default 2 GiB). */
  quotaBackendBytes?: number;
}

/** The options' parseArgs definitions. */
export const ETCD_FLAG_OPTIONS = {
  "max-request-bytes": { type: "string" },
  "max-txn-ops": { type: "string" },
  "quota-backend-bytes": { type: "string" },
} as const;

/** The options' lines for the command's usage text. */
export const ETCD_FLAG_USAGE = `  --max-request-bytes N      largest etcd request proposed (default ${DEFAULT_MAX_REQUEST_BYTES}; the
                             transport's --max-message-bytes must exceed it by 512 KiB)
  --max-txn-ops N            most compares or ops per branch in an etcd txn (default ${DEFAULT_MAX_TXN_OPS})
  --quota-backend-bytes N    past this store size, etcd puts are refused and the NOSPACE
                             alarm raised (default ${DEFAULT_QUOTA_BACKEND_BYTES}, etcd's 2 GiB; 0: the default)`;

/**
 * The service options given by parsed `values` (absent options: etcd's defaults). Throws
 * RangeError naming the option when a value is not a positive integer.
 */
export function etcdFlagValues(
  values: Readonly<Record<string, string | boolean | undefined>>,
): EtcdServiceOptions {
  const out: EtcdServiceOptions = {};
  const bytes = int(values, "max-request-bytes");
  if (bytes !== undefined) out.maxRequestBytes = bytes;
  const ops = int(values, "max-txn-ops");
  if (ops !== undefined) out.maxTxnOps = ops;
  const quota = values["quota-backend-bytes"];
  if (typeof quota === "string") {
    const n = /^\d+$/.test(quota) ? Number(quota) : Number.NaN;
    if (!Number.isSafeInteger(n))
      throw new RangeError(`--quota-backend-bytes must be a non-negative integer, got '${quota}'`);
    if (n > 0) out.quotaBackendBytes = n;
  }
  return out;
}

function int(
  values: Readonly<Record<string, string | boolean | undefined>>,
  name: string,
): number | undefined {
  const text = values[name];
  if (typeof text !== "string") return undefined;
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new RangeError(`--${name} must be a positive integer, got '${text}'`);
  return n;
}
