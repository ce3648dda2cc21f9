/**
 * The online forms of `kv-engine compact`, `backup` and `stats` (`--addr HOST:PORT`): the
 * same reports as the offline forms (store-commands.ts), computed by a running server
 * through its admin service (src/client/admin-client.ts). Backup writes into the server's
 * --backup-dir, under the name --to gives. Compact and backup have no deadline unless
 * --timeout-ms gives one; stats has the client default.
 */
import { AdminClient, type AdminCompactProgress } from "../client/admin-client.js";
import type { CompactionEvent } from "../db/admin-backend.js";
import type { StoreStats } from "../db/store-stats.js";
import { ProgressEstimate } from "../tools/compact.js";
import { clientOptions } from "./client-commands.js";
import { EXIT_OK, intOption, type Parsed } from "./command.js";
import { CompactProgressPrinter } from "./progress.js";
import { formatBytes, textTable } from "./text-table.js";

function adminClient(p: Parsed, addr: string, long: boolean): AdminClient {
  const options = clientOptions(p);
  if (long && intOption(p, "timeout-ms", 1, 86_400_000) === undefined) delete options.timeoutMs;
  return new AdminClient(addr, options);
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
  addr: string,
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
  range: string,
): Promise<number> {
  const client = adminClient(p, addr, true);
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
      `${JSON.stringify({ targetLevel: first.targetLevel, before, after, steps, bytesRead, bytesWritten })}\n`,
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
export async function onlineBackup(p: Parsed, addr: string, to: string): Promise<number> {
  const client = adminClient(p, addr, true);
  try {
    const r = await client.checkpoint(to);
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify({ from: addr, to: r.path, ...r })}\n`);
      return EXIT_OK;
    }
    const tables = r.linked + r.copied;
    process.stdout.write(
      `backup of the store on ${addr} written to ${r.path} (on the server): ${tables} table ` +
        `${tables === 1 ? "file" : "files"} (${r.linked} hard-linked, ${r.copied} copied), ` +
        `${r.bytes} bytes (${formatBytes(r.bytes)})\n`,
    );
    return EXIT_OK;
  } finally {
    client.close();
  }
}

/** `stats --addr`: the server's store stats. */
export async function onlineStats(p: Parsed, addr: string): Promise<number> {
  const client = adminClient(p, addr, false);
  try {
    const stats = await client.stats();
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(stats)}\n`);
      return EXIT_OK;
    }
    const { formatStats } = await import("../index.js");
    process.stdout.write(formatStats(stats as unknown as StoreStats));
    return EXIT_OK;
  } finally {
    client.close();
  }
}
