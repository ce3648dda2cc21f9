/**
 * `kv-engine compact`, `backup` and `stats`: commands that open the store in a data
 * directory (src/tools/: compact.ts, backup.ts, open-store.ts). Opening takes the store's
 * lock, so each fails with exit 1 and a LOCKED message while a server (or any process)
 * has the store open; none creates a store where there is none.
 *
 * With --addr HOST:PORT each runs on a server instead, through its admin service
 * (admin-commands.ts); --data-dir then must not be given.
 *
 * Exit codes: 0 on success, 1 on failure (reason on stderr), 2 for bad usage.
 */
import type { CheckpointResult } from "../db/checkpoint.js";
import type { KvStore } from "../db/kv-store.js";
import type { FileSystem } from "../vfs/file-system.js";
import { byteFormat } from "./byte-format.js";

import {
  dataDirOption,
  EXIT_OK,
  levelOptions,
  type Parsed,
  runCommand,
  STORE_DIR_OPTIONS,
  stringOption,
  UsageError,
} from "./command.js";
import { CONNECTION_OPTIONS, CONNECTION_USAGE } from "./connection-options.js";
import { CompactProgressPrinter } from "./progress.js";
import { formatBytes, textTable } from "./text-table.js";

export const COMPACT_USAGE = `Usage: kv-engine compact --data-dir DIR [options]
       kv-engine compact --addr HOST:PORT [options]

Opens the store in DIR, flushes its memtable and compacts every table overlapping the key
range [--start, --end] (default: all keys) down to the deepest level holding tables,
dropping overwritten and deleted data. Progress goes to stderr: a bar on a terminal, one
line per compaction step otherwise; the percentage is an estimate (bytes still above the
target level for the whole store, levels done for a range). Then prints the files and
bytes per level before and after. Takes the store's lock: run it with the server stopped,
or give --addr to compact on a running server (the same steps and report).

Options:
  --data-dir DIR     data directory (required)
  --start K          first key of the range (inclusive)
  --end K            last key of the range (inclusive)
  --key-hex, --hex   --start and --end are hex
  --num-levels N     levels the store was opened with (default 7)
  --json             print the report as one JSON object
  -h, --help         print this help

${CONNECTION_USAGE}`;

export const BACKUP_USAGE = `Usage: kv-engine backup --data-dir DIR --to DIR2 [options]
       kv-engine backup --addr HOST:PORT --to NAME [options]

Writes a consistent copy of the store in DIR to DIR2 (which must not exist): the memtable
is flushed, every table file is hard-linked into DIR2 (copied when linking fails, e.g.
across file systems) and a fresh manifest is written. The copy holds every write made
before the backup, has no logs, and opens as a store. Prints the tables linked and copied
and their bytes. Takes the store's lock: run it with the server stopped. With --addr,
the running server writes the copy into NAME under its --backup-dir (a name or a path
inside that directory that does not exist; "..", other absolute paths and symbolic links
are refused).

Options:
  --data-dir DIR     data directory to copy (required offline)
  --to DIR2          where to write the copy (required; must not exist)
  --num-levels N     levels the store was opened with (default 7)
  --json             print the report as one JSON object
  -h, --help         print this help

${CONNECTION_USAGE}`;

export const STATS_USAGE = `Usage: kv-engine stats --data-dir DIR [options]
       kv-engine stats --addr HOST:PORT [options]

Opens the store in DIR and prints its statistics: a per-level table (files, size, and the
flushes and compactions that wrote into each level) and the write path, caches and
background state. Read-mostly: it takes the store's lock (so it fails while a server has
the store open; a running server exposes the same numbers as metrics), replays the logs
and may finish a due compaction before closing. Counters of writes, caches and
compactions start from zero at this open. With --addr, the running server's stats (its
counters since it opened the store).

Options:
  --data-dir DIR     data directory (required offline)
  --num-levels N     levels the store was opened with (default 7)
  --json             print db.stats() as one JSON object
  -h, --help         print this help

${CONNECTION_USAGE}`;

/** True iff --addr is given (then --data-dir must not be): the command runs online. */
function online(p: Parsed): boolean {
  const addr = stringOption(p, "addr");
  if (addr === undefined) return false;
  if (addr.length === 0) throw new UsageError("--addr must not be empty");
  if (stringOption(p, "data-dir") !== undefined) {
    throw new UsageError("give --data-dir (offline) or --addr (online), not both");
  }
  if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
  return true;
}

/**
 * The copy of a cluster member's store: a plain store of its user keys, as the online
 * backup of a member writes it (src/replication/member-admin.ts).
 */
async function memberCheckpoint(
  db: KvStore,
  to: string,
  fs: FileSystem,
): Promise<CheckpointResult> {
  const { MemberAdmin } = await import("../replication/member-admin.js");
  const { openMemberMvcc } = await import("../replication/kv-state-machine.js");
  const mvcc = await openMemberMvcc(db);
  try {
    return await new MemberAdmin({
      localStore: async () => db,
      localMvcc: () => mvcc,
      fs,
      stats: () => db.stats(),
    }).checkpoint(to);
  } finally {
    await mvcc?.close();
  }
}

export function compactCommand(argv: string[]): Promise<number> {
  const options = {
    ...STORE_DIR_OPTIONS,
    ...CONNECTION_OPTIONS,
    start: { type: "string" },
    end: { type: "string" },
    hex: { type: "boolean" },
    "key-hex": { type: "boolean" },
  } as const;
  return runCommand("compact", COMPACT_USAGE, argv, options, async (p) => {
    const isOnline = online(p);
    const store = isOnline ? undefined : await dataDirOption(p, "compact");
    const dir = store?.dir ?? "";
    const fmt = byteFormat(p.values.hex === true || p.values["key-hex"] === true, "--key-hex");
    const startText = stringOption(p, "start");
    const endText = stringOption(p, "end");
    const start = startText === undefined ? undefined : fmt.parse(startText, "--start");
    const end = endText === undefined ? undefined : fmt.parse(endText, "--end");
    const range =
      start === undefined && end === undefined
        ? "all keys"
        : `keys ${start === undefined ? "(first)" : fmt.show(start)} .. ${end === undefined ? "(last)" : fmt.show(end)}`;
    if (isOnline) {
      const { onlineCompact } = await import("./admin-commands.js");
      return onlineCompact(p, start, end, range);
    }
    const levels = levelOptions(p);
    const { compactStore } = await import("../tools/compact.js");
    if (store?.member !== undefined && (start !== undefined || end !== undefined)) {
      const { openExistingStore } = await import("../tools/open-store.js");
      const { isRevisioned } = await import("../mvcc/revisioned.js");
      const db = await openExistingStore(dir);
      const revisioned = await isRevisioned(db).finally(() => db.close());
      if (revisioned) {
        throw new UsageError(
          "a cluster member's store with revisions is compacted whole: drop --start and --end",
        );
      }
    }
    // A member's store of the first layout keeps user keys behind a prefix byte.
    const { storedKey } = await import("../replication/keys.js");
    const stored = (k: Uint8Array | undefined) =>
      k === undefined || store?.member === undefined ? k : storedKey(k);
    const progress = new CompactProgressPrinter(process.stderr);
    let report: Awaited<ReturnType<typeof compactStore>>;
    try {
      report = await compactStore(dir, {
        ...levels,
        start: stored(start),
        end: stored(end),
        onStart: (_, target) =>
          progress.start(`compacting ${range} of ${dir} down to level ${target}`),
        onStep: (step) => progress.step(step),
      });
    } catch (err) {
      if (progress.open) process.stderr.write("\n"); // the error goes on its own line
      throw err;
    }
    progress.done(`done: ${report.steps.length === 1 ? "1 step" : `${report.steps.length} steps`}`);
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return EXIT_OK;
    }
    const rows = report.before.files.map((files, level) => [
      String(level),
      String(files),
      formatBytes(report.before.bytes[level] ?? 0),
      String(report.after.files[level] ?? 0),
      formatBytes(report.after.bytes[level] ?? 0),
    ]);
    const lines = [
      `compacted ${range} of ${dir} down to level ${report.targetLevel}: ` +
        `${report.steps.length === 1 ? "1 step" : `${report.steps.length} steps`}, read ${formatBytes(report.bytesRead)}, ` +
        `wrote ${formatBytes(report.bytesWritten)}`,
      ...textTable(["Level", "Files before", "Size before", "Files after", "Size after"], rows),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    return EXIT_OK;
  });
}

export function backupCommand(argv: string[]): Promise<number> {
  const options = { ...STORE_DIR_OPTIONS, ...CONNECTION_OPTIONS, to: { type: "string" } } as const;
  return runCommand("backup", BACKUP_USAGE, argv, options, async (p) => {
    const to = stringOption(p, "to");
    const isOnline = online(p);
    if (to === undefined || to.length === 0) throw new UsageError("--to is required");
    if (isOnline) {
      const { onlineBackup } = await import("./admin-commands.js");
      return onlineBackup(p, to);
    }
    const { dir, member } = await dataDirOption(p, "backup");
    const levels = levelOptions(p);
    const { backupStore } = await import("../tools/backup.js");
    const r = await backupStore(dir, to, {
      ...levels,
      ...(member === undefined ? {} : { checkpoint: memberCheckpoint }),
    });
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      return EXIT_OK;
    }
    const tables = r.linked + r.copied;
    process.stdout.write(
      `backup of ${r.from} written to ${r.to}: ${tables} table ${tables === 1 ? "file" : "files"} ` +
        `(${r.linked} hard-linked, ${r.copied} copied), ${r.bytes} bytes (${formatBytes(r.bytes)})\n` +
        `the copy: ${r.manifest}, last sequence ${r.lastSequence}, ` +
        `files per level ${r.levelFiles.join("/")}\n` +
        (member === undefined
          ? ""
          : `(cluster member ${member}'s keys as a single-node store: kv-engine serve --data-dir ${r.to} serves them)\n`),
    );
    return EXIT_OK;
  });
}

export function statsCommand(argv: string[]): Promise<number> {
  const options = { ...STORE_DIR_OPTIONS, ...CONNECTION_OPTIONS } as const;
  return runCommand("stats", STATS_USAGE, argv, options, async (p) => {
    if (online(p)) {
      const { onlineStats } = await import("./admin-commands.js");
      return onlineStats(p);
    }
    const { dir } = await dataDirOption(p, "stats");
    const levels = levelOptions(p);
    const { openExistingStore } = await import("../tools/open-store.js");
    const { formatStats } = await import("../index.js");
    const db = await openExistingStore(dir, levels);
    try {
      const stats = db.stats();
      process.stdout.write(
        p.values.json === true ? `${JSON.stringify(stats)}\n` : formatStats(stats),
      );
    } finally {
      await db.close();
    }
    return EXIT_OK;
  });
}

export const UPGRADE_USAGE = `Usage: kv-engine upgrade --data-dir DIR --to DIR2 [options]

Copies a single-node store written before kv-engine kept revisions (it serves kv.v1 only;
etcd's API refuses it) into DIR2, which must not exist, as a store with revisions: every
key at revision 1. Serve DIR2 afterwards (kv-engine serve --data-dir DIR2). DIR is only
read; stop its server first (the store's lock is taken). A crash leaves DIR2.partial:
run again.

Options:
  --data-dir DIR             the store to copy (required)
  --to DIR2                  where the copy goes (required; must not exist)
  --json                     print the result as JSON
  -h, --help                 print this help
`;

export function upgradeCommand(argv: string[]): Promise<number> {
  const options = {
    "data-dir": { type: "string" },
    to: { type: "string" },
    json: { type: "boolean" },
  } as const;
  return runCommand("upgrade", UPGRADE_USAGE, argv, options, async (p) => {
    if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
    const from = stringOption(p, "data-dir");
    const to = stringOption(p, "to");
    if (from === undefined || from.length === 0) throw new UsageError("--data-dir is required");
    if (to === undefined || to.length === 0) throw new UsageError("--to is required");
    const { upgradeStore } = await import("../tools/upgrade.js");
    const r = await upgradeStore(from, to);
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      return EXIT_OK;
    }
    process.stdout.write(
      `upgraded ${r.from} into ${r.to}: ${r.keys} ${r.keys === 1 ? "key" : "keys"} at revision 1; ` +
        `kv-engine serve --data-dir ${r.to} serves them to kv.v1 and etcd's API\n`,
    );
    return EXIT_OK;
  });
}

export const RESTORE_USAGE = `Usage: kv-engine restore --snapshot FILE --data-dir DIR [options]

Writes the store in FILE (what etcd's Maintenance.Snapshot streamed, e.g. etcdctl
snapshot save; kv-engine's own format, not etcd's bbolt) into DIR, which must not exist:
kv-engine serve --data-dir DIR then serves it as a single node. To start a cluster from
it instead, give every initial member --initial-snapshot FILE (docs/etcd.md).

Options:
  --snapshot FILE            the snapshot (required)
  --data-dir DIR             where the store goes (required; must not exist)
  --json                     print the result as JSON
  -h, --help                 print this help
`;

export function restoreCommand(argv: string[]): Promise<number> {
  const options = {
    snapshot: { type: "string" },
    "data-dir": { type: "string" },
    json: { type: "boolean" },
  } as const;
  return runCommand("restore", RESTORE_USAGE, argv, options, async (p) => {
    if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
    const file = stringOption(p, "snapshot");
    const dir = stringOption(p, "data-dir");
    if (file === undefined || file.length === 0) throw new UsageError("--snapshot is required");
    if (dir === undefined || dir.length === 0) throw new UsageError("--data-dir is required");
    const { unpackSnapshot } = await import("../etcd/snapshot-archive.js");
    const { openExistingStore } = await import("../tools/open-store.js");
    const { isRevisioned } = await import("../mvcc/revisioned.js");
    const r = await unpackSnapshot(file, dir);
    const store = await openExistingStore(dir);
    let revisioned: boolean;
    try {
      revisioned = await isRevisioned(store);
    } finally {
      await store.close();
    }
    const result = { snapshot: file, dataDir: dir, ...r, revisioned };
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return EXIT_OK;
    }
    process.stdout.write(
      `restored ${file} into ${dir}: ${r.files} files, ${r.bytes} bytes; ` +
        `kv-engine serve --data-dir ${dir} serves it\n`,
    );
    return EXIT_OK;
  });
}
