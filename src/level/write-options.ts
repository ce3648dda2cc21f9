import type { WriteOptions } from "../index.js";

/**
 * Engine write options from abstract-level write options: `sync` (a boolean) is passed on,
 * anything else is left to the store's default.
 */
export function writeOptions(options: { sync?: unknown } | undefined): WriteOptions | undefined {
  const sync = options?.sync;
  return typeof sync === "boolean" ? { sync } : undefined;
}
