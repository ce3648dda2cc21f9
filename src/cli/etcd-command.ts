/**
 * What the commands over etcd's v3 API share (watch, lease, txn, lock, elect, compaction,
 * endpoint, alarm, snapshot, get --rev): an EtcdClient made from the connection flags
 * (the same --addr, TLS, token and --timeout-ms as every client command), the JSON and
 * text shapes of key-values and events, lease IDs (hex, as etcdctl prints them), and
 * the wait for SIGINT/SIGTERM of the commands that run until interrupted.
 *
 * JSON: revisions and versions are numbers; keys and values are text when UTF-8 (and no
 * hex option), else `keyHex`/`valueHex` (byte-format.ts, as every --json output); lease
 * and member IDs are hex strings (int64s do not fit a JSON number).
 */
import { EtcdClient } from "../client/etcd/etcd-client.js";
import type { KeyValueRecord } from "../client/etcd/etcd-types.js";
import type { WatchEvent } from "../client/etcd/etcd-watch.js";
import { type ClientContext, COMMON_USAGE, runClientCommand } from "./client-commands.js";
import { type ByteFormats, intOption, type Parsed, UsageError } from "./command.js";
import { addresses, clientOptions } from "./connection-options.js";

export { COMMON_USAGE as ETCD_COMMON_USAGE };

/** What an etcd-API command body gets. */
export type EtcdContext = ClientContext<EtcdClient>;

/** Runs etcd-API command `name` (runClientCommand with an EtcdClient of the flags). */
export function runEtcdCommand(
  name: string,
  usage: string,
  argv: string[],
  options: Record<string, { type: "string" | "boolean"; multiple?: boolean }>,
  body: (ctx: EtcdContext) => Promise<number>,
): Promise<number> {
  return runClientCommand(name, usage, argv, options, (p) => etcdClient(p), body);
}

/**
 * An EtcdClient of --addr with the connection flags. `waits`: the command waits for others
 * (lock, elect): no deadline unless --timeout-ms gives one.
 */
export function etcdClient(p: Parsed, waits = false): EtcdClient {
  const options = clientOptions(p);
  if (waits && intOption(p, "timeout-ms", 1, 86_400_000) === undefined) delete options.timeoutMs;
  return new EtcdClient(addresses(p), {
    ...(options.tls === undefined ? {} : { tls: options.tls }),
    ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxReceiveMessageBytes === undefined
      ? {}
      : { maxReceiveMessageBytes: options.maxReceiveMessageBytes }),
  });
}

export function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function expectArgs(args: readonly string[], names: string[]): string[] {
  if (args.length !== names.length) {
    throw new UsageError(
      `expected ${names.join(" ") || "no argument"}, got ${args.length} argument(s)`,
    );
  }
  return [...args];
}

/** A lease or member ID as etcdctl prints it: hex of its int64 (two's complement for negatives). */
export function hexId(id: bigint): string {
  return BigInt.asUintN(64, id).toString(16);
}

/** A lease ID argument: hex (as printed), as etcd's int64. */
export function parseLeaseId(text: string, what = "ID"): bigint {
  if (!/^(0x)?[0-9a-fA-F]{1,16}$/.test(text)) {
    throw new UsageError(
      `${what} must be a lease ID in hex (as 'lease grant' prints it), got '${text}'`,
    );
  }
  return BigInt.asIntN(64, BigInt(text.startsWith("0x") ? text : `0x${text}`));
}

/** A revision argument: a non-negative integer (0: none). */
export function parseRevision(text: string, what: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n)) {
    throw new UsageError(`${what} must be a revision (a whole number >= 0), got '${text}'`);
  }
  return n;
}

/** A key-value as a JSON object (key, value, revisions, version, lease). */
export function kvJson(f: ByteFormats, kv: KeyValueRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  f.key.json(out, "key", kv.key);
  f.value.json(out, "value", kv.value);
  out.createRevision = kv.createRevision;
  out.modRevision = kv.modRevision;
  out.version = kv.version;
  out.lease = hexId(kv.lease);
  return out;
}

/** A key-value as one text line: KEY<TAB>VALUE (escaped: never a raw tab or newline). */
export function kvText(f: ByteFormats, kv: KeyValueRecord): string {
  return `${f.key.show(kv.key)}\t${f.value.show(kv.value)}`;
}

/**
 * A watch event as one line. Text: REVISION<TAB>PUT|DELETE<TAB>KEY[<TAB>VALUE] (a put's
 * value; with `prevKv`, then the previous value or "(absent)"). JSON: {revision, type, key,
 * value, createRevision, modRevision, version, lease[, prevKv]}.
 */
export function eventLine(f: ByteFormats, e: WatchEvent, json: boolean, prevKv: boolean): string {
  if (json) {
    const out: Record<string, unknown> = {
      revision: e.kv.modRevision,
      type: e.type,
      ...kvJson(f, e.kv),
    };
    if (e.type === "delete") {
      delete out.value;
      delete out.valueHex;
    }
    if (prevKv) out.prevKv = e.prevKv === undefined ? null : kvJson(f, e.prevKv);
    return JSON.stringify(out);
  }
  const cols = [
    String(e.kv.modRevision),
    e.type === "put" ? "PUT" : "DELETE",
    f.key.show(e.kv.key),
  ];
  if (e.type === "put") cols.push(f.value.show(e.kv.value));
  if (prevKv) cols.push(e.prevKv === undefined ? "(absent)" : f.value.show(e.prevKv.value));
  return cols.join("\t");
}

/**
 * An AbortSignal that fires at the first SIGINT or SIGTERM (the process then does not die
 * of it: the command ends its work and exits 0); `dispose` removes the handlers.
 */
export function interruption(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const on = () => controller.abort();
  process.once("SIGINT", on);
  process.once("SIGTERM", on);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
    },
  };
}

/** Resolves when any of `signals` fires (at once if one has). */
export function firstOf(...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((s) => s.aborted)) return resolve();
    for (const s of signals) s.addEventListener("abort", () => resolve(), { once: true });
  });
}
