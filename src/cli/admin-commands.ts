/**
 * The online forms of `kv-engine compact`, `backup` and `stats` (`--addr ADDRS`): the
 * same reports as the offline forms (store-commands.ts), computed by a running server
 * through its admin service (src/client/admin-client.ts). With one address they act on
 * that server or member; with several (a cluster's members), on the leader, found by
 * asking them. Every report names the member it acted on. Backup writes into the
 * server's --backup-dir, under the name --to gives. Compact and backup have no deadline
 * unless --timeout-ms gives one; stats has the client default.
 */

import { status } from "@grpc/grpc-js";
import { AdminClient, type AdminCompactProgress } from "../client/admin-client.js";
import { isKvClientError } from "../client/kv-client-error.js";
import type { CompactionEvent } from "../db/admin-backend.js";
import type { StoreStats } from "../db/store-stats.js";
import { ProgressEstimate } from "../tools/compact.js";
import { EXIT_OK, intOption, type Parsed } from "./command.js";
import { addresses, clientOptions, kvClient } from "./connection-options.js";
import { CompactProgressPrinter } from "./progress.js";
import { formatBytes, textTable } from "./text-table.js";

/** The node an admin command acts on. */
interface AdminTarget {
  /** Its client address, "host:port". */
  address: string;
  /** Its member name (undefined for a single-node server). */
  member: string | undefined;
  /** How reports name it: "member n2 (127.0.0.1:50052, the leader)", or the address. */
  label: string;
}

/**
 * The node of --addr: the only address given (named by its member name when it is a
 * cluster member), or the leader of the members listed.
 */
async function adminTarget(p: Parsed): Promise<AdminTarget> {
  const addrs = addresses(p);
  const client = kvClient(p, addrs);
  try {
    if (addrs.length === 1) {
      const address = addrs[0]!;
      // A single-node server has no cluster service; any failure here shows again, better
      // said, in the admin call itself.
      const s = await client.status(address).catch(() => undefined);
      return s === undefined
        ? { address, member: undefined, label: address }
        : { address, member: s.name, label: `member ${s.name} (${address})` };
    }
    const list = await client.memberList().catch((err: unknown) => {
      if (!isKvClientError(err, status.UNIMPLEMENTED)) throw err;
      throw new Error(
        `several addresses are a cluster's members, to find the leader: ${err.message}`,
      );
    });
    const leader = list.members.find((m) => m.id === list.leaderId);
    if (leader === undefined) {
      throw new Error(
        `no leader is known to ${client.endpoints.join(", ")} (an election may be in progress): retry, or give one member's address to act on it`,
      );
    }
    if (leader.clientAddress === "") {
      throw new Error(
        `the leader ${leader.name} has not published its client address yet: retry, or give one member's address`,
      );
    }
    return {
      address: leader.clientAddress,
      member: leader.name,
      label: `member ${leader.name} (${leader.clientAddress}, the leader)`,
    };
  } finally {
    client.close();
  }
}

function adminClient(p: Parsed, target: AdminTarget, long: boolean): AdminClient {
  const options = clientOptions(p);
  if (long && intOption(p, "timeout-ms", 1, 86_400_000) === undefined) delete options.timeoutMs;
  return new AdminClient(target.address, options);
}

function event(m: AdminCompactProgress): CompactionEvent {
  return {
    type: "compaction",
    level: m.level,
    outputLevel: m.outputLevel,
    trivialMove: m.trivialMove,
    manual: m.manual,
    inputFiles: m.inputFiles,
    outputFiles: m.outputFiles,
    bytesRead: m.bytesRead,
    bytesWritten: m.bytesWritten,
    durationMs: 0,
  };
}

/** `compact --addr`: compacts `range` on the server, progress on stderr, a table on stdout. */
export async function onlineCompact(
  p: Parsed,
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
  range: string,
): Promise<number> {
  const target = await adminTarget(p);
  const addr = target.label;
  const client = adminClient(p, target, true);
  const progress = new CompactProgressPrinter(process.stderr);
  let first: AdminCompactProgress | undefined;
  let last: AdminCompactProgress | undefined;
  let estimate: ProgressEstimate | undefined;
  let bytesRead = 0;
  let bytesWritten = 0;
  try {
    for await (const m of client.compactRange(start, end)) {
      if (first === undefined) {
        first = m;
        const before = m.before ?? { files: [], bytes: [] };
        estimate = new ProgressEstimate(
          m.targetLevel,
          before,
          start !== undefined || end !== undefined,
        );
        progress.start(`compacting ${range} on ${addr} down to level ${m.targetLevel}`);
      } else if (m.done) {
        last = m;
      } else if (estimate !== undefined) {
        const levels = m.levels ?? { files: [], bytes: [] };
        bytesRead += m.bytesRead;
        bytesWritten += m.bytesWritten;
        progress.step({
          step: m.step,
          event: event(m),
          percent: estimate.update(m.level, levels.bytes),
          levels,
        });
      }
    }
  } catch (err) {
    if (progress.open) process.stderr.write("\n");
    throw err;
  } finally {
    client.close();
  }
  if (first === undefined || last === undefined) {
    throw new Error(`compact on ${addr}: the server's progress stream ended early`);
  }
  const steps = last.step;
  progress.done(`done: ${steps === 1 ? "1 step" : `${steps} steps`}`);
  const before = first.before ?? { files: [], bytes: [] };
  const after = last.after ?? { files: [], bytes: [] };
  if (p.values.json === true) {
    process.stdout.write(
      `${JSON.stringify({ address: target.address, member: target.member, targetLevel: first.targetLevel, before, after, steps, bytesRead, bytesWritten })}\n`,
    );
    return EXIT_OK;
  }
  const rows = before.files.map((files, level) => [
    String(level),
    String(files),
    formatBytes(before.bytes[level] ?? 0),
    String(after.files[level] ?? 0),
    formatBytes(after.bytes[level] ?? 0),
  ]);
  const lines = [
    `compacted ${range} on ${addr} down to level ${first.targetLevel}: ` +
      `${steps === 1 ? "1 step" : `${steps} steps`}, read ${formatBytes(bytesRead)}, ` +
      `wrote ${formatBytes(bytesWritten)}`,
    ...textTable(["Level", "Files before", "Size before", "Files after", "Size after"], rows),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return EXIT_OK;
}

/** `backup --addr --to NAME`: a checkpoint under the server's --backup-dir. */
export async function onlineBackup(p: Parsed, to: string): Promise<number> {
  const target = await adminTarget(p);
  const client = adminClient(p, target, true);
  try {
    const r = await client.checkpoint(to);
    if (p.values.json === true) {
      process.stdout.write(
        `${JSON.stringify({ from: target.address, member: target.member, to: r.path, ...r })}\n`,
      );
      return EXIT_OK;
    }
    const tables = r.linked + r.copied;
    process.stdout.write(
      `backup of the store on ${target.label} written to ${r.path} (on the server): ${tables} table ` +
        `${tables === 1 ? "file" : "files"} (${r.linked} hard-linked, ${r.copied} copied), ` +
        `${r.bytes} bytes (${formatBytes(r.bytes)})\n`,
    );
    return EXIT_OK;
  } finally {
    client.close();
  }
}

/** `stats --addr`: the server's store stats (--json: the member named on stderr). */
export async function onlineStats(p: Parsed): Promise<number> {
  const target = await adminTarget(p);
  const client = adminClient(p, target, false);
  try {
    const stats = await client.stats();
    if (p.values.json === true) {
      process.stderr.write(`kv-engine stats: the store on ${target.label}\n`);
      process.stdout.write(`${JSON.stringify(stats)}\n`);
      return EXIT_OK;
    }
    const { formatStats } = await import("../index.js");
    process.stdout.write(
      `The store on ${target.label}\n${formatStats(stats as unknown as StoreStats)}`,
    );
    return EXIT_OK;
  } finally {
    client.close();
  }
}
