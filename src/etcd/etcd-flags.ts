/**
 * The command-line options of etcd's KV service, for `kv-engine serve` to add (the CLI
 * parses them with node:util parseArgs): --max-request-bytes and --max-txn-ops, with
 * etcd's names and defaults.
 */
import { DEFAULT_MAX_TXN_OPS } from "../mvcc/requests/index.js";
import { DEFAULT_MAX_REQUEST_BYTES, type EtcdKvServiceOptions } from "./kv-service.js";

/** The options' parseArgs definitions. */
export const ETCD_FLAG_OPTIONS = {
  "max-request-bytes": { type: "string" },
  "max-txn-ops": { type: "string" },
} as const;

/** The options' lines for the command's usage text. */
export const ETCD_FLAG_USAGE = `  --max-request-bytes N      largest etcd request proposed (default ${DEFAULT_MAX_REQUEST_BYTES}; the
                             transport's --max-message-bytes must exceed it by 512 KiB)
  --max-txn-ops N            most compares or ops per branch in an etcd txn (default ${DEFAULT_MAX_TXN_OPS})`;

/**
 * The service options given by parsed `values` (absent options: etcd's defaults). Throws
 * RangeError naming the option when a value is not a positive integer.
 */
export function etcdFlagValues(
  values: Readonly<Record<string, string | boolean | undefined>>,
): EtcdKvServiceOptions {
  const out: EtcdKvServiceOptions = {};
  const bytes = int(values, "max-request-bytes");
  if (bytes !== undefined) out.maxRequestBytes = bytes;
  const ops = int(values, "max-txn-ops");
  if (ops !== undefined) out.maxTxnOps = ops;
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
