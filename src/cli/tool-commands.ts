/**
 * `kv-engine verify --data-dir DIR` and `kv-engine repair --data-dir DIR`: offline checks
 * and repair of a data directory (src/tools/). Both take the store's lock, so they refuse
 * (exit 1, LOCKED) while a server or another process has the store open.
 *
 * Exit codes: verify 0 when nothing is wrong, 1 when a problem was found (the report on
 * stdout) or the check could not run (reason on stderr); repair 0 once the directory was
 * repaired (what it dropped is listed on stdout), 1 when it could not be; both 2 for bad
 * usage.
 */
import type { RepairReport } from "../tools/repair.js";
import type { VerifyReport } from "../tools/verify.js";
import {
  dataDirOption,
  EXIT_FAILURE,
  EXIT_OK,
  levelOptions,
  runCommand,
  STORE_DIR_OPTIONS,
} from "./command.js";

export const VERIFY_USAGE = `Usage: kv-engine verify --data-dir DIR [options]

Checks the store in DIR without changing it: CURRENT and the manifest (every record's
checksum, levels sorted, no overlaps below level 0, every listed table present), every
checksum of every live table and write-ahead log, and that tables agree with the manifest.
Exits 0 when nothing is wrong, 1 with a report when something is.

Options:
  --data-dir DIR     data directory (required)
  --num-levels N     levels the store was opened with (default 7)
  --json             print the report as one JSON object
  -h, --help         print this help
`;

export const REPAIR_USAGE = `Usage: kv-engine repair --data-dir DIR [options]

Rebuilds the manifest of the store in DIR from the tables and write-ahead logs that check
out, so that it opens again, and lists everything it dropped. A damaged table keeps the
entries of every block that checks out (the output says how many were salvaged and
lost). Keeps the manifest's levels when a manifest is readable; otherwise merges every
good table into level 1. Damaged log records are cut out of their log. Deletes nothing:
the files it takes out of the store are moved to DIR/lost/. Run it with the store closed
(it takes the lock).

Options:
  --data-dir DIR     data directory (required)
  --num-levels N     levels the store was opened with (default 7)
  --json             print the report as one JSON object
  -h, --help         print this help
`;

function printVerify(report: VerifyReport, dir: string): void {
  const lines: string[] = [];
  lines.push(`${report.ok ? "OK" : "DAMAGED"}: ${dir}`);
  lines.push(`manifest: ${report.manifest ?? "(unreadable)"}`);
  lines.push(
    `tables checked: ${report.tablesChecked} (${report.tableEntries} entries), files per level: ${report.levelFiles.join("/") || "-"}`,
  );
  lines.push(`logs checked: ${report.logsChecked} (${report.logRecords} records)`);
  for (const p of report.problems) lines.push(`problem: ${p}`);
  for (const n of report.notes) lines.push(`note: ${n}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

function printRepair(report: RepairReport, dir: string): void {
  const lines: string[] = [];
  lines.push(`repaired: ${dir}`);
  lines.push(
    report.mode === "manifest"
      ? `levels kept from ${report.manifestUsed}`
      : `no readable manifest: ${report.tablesMerged} good tables merged into ${report.tablesKept} level-1 tables`,
  );
  if (report.manifestProblem !== undefined)
    lines.push(`manifest problem: ${report.manifestProblem}`);
  lines.push(`tables kept: ${report.tablesKept}, entries: ${report.entriesKept}`);
  lines.push(
    `logs replayed at open: ${report.logsKept.length}, rewritten: ${report.logsRewritten.length}`,
  );
  lines.push(`new manifest: ${report.newManifest}`);
  if (report.salvagedTables.length > 0 || report.entriesLost > 0) {
    lines.push(
      `entries salvaged: ${report.entriesSalvaged}, lost: ${report.entriesLost} (from ${report.salvagedTables.length} salvaged and ${report.droppedTables.length} dropped tables)`,
    );
  }
  if (report.dropped.length === 0) lines.push("nothing dropped");
  for (const d of report.dropped) lines.push(`dropped: ${d}`);
  for (const a of report.archived) lines.push(`moved to ${a.to}: ${a.file} (${a.reason})`);
  if (report.archived.length > 0) {
    lines.push(
      `nothing was deleted: the files taken out are in ${report.lostDir} (remove it once the repaired store checks out)`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function verifyCommand(argv: string[]): Promise<number> {
  return runCommand("verify", VERIFY_USAGE, argv, STORE_DIR_OPTIONS, async (p) => {
    const { dir } = await dataDirOption(p, "verify");
    const { verifyStore } = await import("../tools/verify.js");
    const report = await verifyStore(dir, levelOptions(p));
    if (p.values.json === true) process.stdout.write(`${JSON.stringify(report)}\n`);
    else printVerify(report, dir);
    return report.ok ? EXIT_OK : EXIT_FAILURE;
  });
}

export function repairCommand(argv: string[]): Promise<number> {
  return runCommand("repair", REPAIR_USAGE, argv, STORE_DIR_OPTIONS, async (p) => {
    const { dir } = await dataDirOption(p, "repair");
    const { repairStore } = await import("../tools/repair.js");
    const report = await repairStore(dir, levelOptions(p));
    if (p.values.json === true) process.stdout.write(`${JSON.stringify(report)}\n`);
    else printRepair(report, dir);
    return EXIT_OK;
  });
}
