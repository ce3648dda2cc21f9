/**
 * `kv-engine sst dump FILE`, `wal dump FILE` and `manifest dump DIR`: print a table, a
 * write-ahead log or a manifest (decoded by src/tools/*-dump.ts) as text or JSON. They
 * only read, take no lock, and work while a server has the store open.
 *
 * Exit codes: 0 when the file was read and holds no damage; 1 when it could not be read
 * (reason on stderr) or damage was found (what could be read is printed first, the damage
 * named in the output); 2 for bad usage.
 */
import type { FileSystem } from "../vfs/file-system.js";
import {
  BYTE_FORMAT_OPTIONS,
  type ByteFormats,
  byteFormatsOf,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  intOption,
  type Parsed,
  runCommand,
  splitCommand,
  UsageError,
  usageLine,
} from "./command.js";
import { entryJson, manifestJson, tableJson, walJson } from "./dump-json.js";
import { manifestText, opText, tableText, walText } from "./dump-text.js";

export const SST_DUMP_USAGE = `Usage: kv-engine sst dump FILE [options]

Prints a table file (NNNNNN.sst): its properties (entries, tombstones, key and sequence
range, raw sizes, compression), the footer's block handles, the Bloom filter (bits,
probes, bits per key, expected false-positive rate), and the index: every data block with
its offset, size, compression, entry count, first and last key and index key. Keys are
shown as KEY#SEQUENCE; bytes that are not printable are escaped (\\n, \\t, \\xNN, ...).
Read-only; safe while a server runs. Exits 1 if a block cannot be read (the rest is
printed).

Options:
  --entries          also print every entry: SEQ, PUT or DEL, KEY, VALUE (tab-separated)
  --key-hex          print keys in hex
  --value-hex        print values in hex
  --hex              both --key-hex and --value-hex
  --json             print one JSON object (bytes as "key", or "keyHex" when not UTF-8)
  -h, --help         print this help
`;

export const WAL_DUMP_USAGE = `Usage: kv-engine wal dump FILE [options]

Prints every record of a write-ahead log (NNNNNN.log): its offset and length, and the
write batch inside (first sequence number, count, and each operation: SEQ, PUT or DEL,
KEY, VALUE, tab-separated). Damage does not stop the dump: every record that checks out is
printed, and each damaged region is listed with its offset, size and kind, a torn tail
(what a crash during an append leaves; recovery drops it) or corruption followed by valid
records. Read-only; safe while a server runs (its last record may show as torn). Exits 1
when corruption or a malformed batch is found (not for a torn tail alone), and when FILE
is not a log at all (no record checks out and it does not start like one, or no record
holds a write batch).

Options:
  --key-hex          print keys in hex
  --value-hex        print values in hex
  --hex              both --key-hex and --value-hex
  --json             print one JSON object
  -h, --help         print this help
`;

export const MANIFEST_DUMP_USAGE = `Usage: kv-engine manifest dump DIR [options]

Prints the version history of the store in DIR (for a cluster member's data directory,
of the store in it): the manifest CURRENT names (or the MANIFEST-NNNNNN file given
instead of DIR), every edit in it (log number, next file
number, last sequence, tables added and removed per level with their size, entries and
key range) and the final version's tables per level. Read-only; safe while a server runs.
Exits 1 when the manifest is damaged or an edit does not apply (what could be read is
printed).

Options:
  --num-levels N     levels the store was opened with (default 7)
  --hex, --key-hex   print keys in hex
  --json             print one JSON object
  -h, --help         print this help
`;

const OPTIONS = {
  ...BYTE_FORMAT_OPTIONS,
  json: { type: "boolean" },
} as const;

/** The one positional argument (the file or directory). */
function target(p: Parsed, what: string): string {
  const [t, extra] = p.positionals;
  if (t === undefined || t.length === 0) throw new UsageError(`${what} is required`);
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  return t;
}

function print(lines: readonly string[]): void {
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
}

/** The real file system, loaded on use (so that --help stays quick). */
async function realFs(): Promise<FileSystem> {
  const { RealFileSystem } = await import("../vfs/real-file-system.js");
  return new RealFileSystem();
}

function formatOf(p: Parsed): ByteFormats {
  return byteFormatsOf(p);
}

function sstDump(argv: string[]): Promise<number> {
  const options = { ...OPTIONS, entries: { type: "boolean" } } as const;
  return runCommand("sst dump", SST_DUMP_USAGE, argv, options, async (p) => {
    const file = target(p, "FILE");
    const { openTableDump } = await import("../tools/sst-dump.js");
    const fmt = formatOf(p);
    const dump = await openTableDump(await realFs(), file);
    try {
      const s = dump.summary;
      const withEntries = p.values.entries === true;
      if (p.values.json === true) {
        const out = tableJson(fmt, s);
        if (withEntries) out.entries = [...dump.entries()].map((e) => entryJson(fmt, e));
        process.stdout.write(`${JSON.stringify(out)}\n`);
      } else {
        print(tableText(fmt, s));
        if (withEntries) {
          print(["entries:"]);
          // In chunks: a table may hold far more entries than one string should.
          let chunk: string[] = [];
          for (const e of dump.entries()) {
            chunk.push(opText(fmt, e));
            if (chunk.length === 1000) {
              print(chunk);
              chunk = [];
            }
          }
          print(chunk);
        }
        print(s.problems.map((x) => `problem: ${x}`));
      }
      return s.problems.length === 0 ? EXIT_OK : EXIT_FAILURE;
    } finally {
      await dump.close();
    }
  });
}

function walDump(argv: string[]): Promise<number> {
  return runCommand("wal dump", WAL_DUMP_USAGE, argv, OPTIONS, async (p) => {
    const file = target(p, "FILE");
    const { dumpLog } = await import("../tools/wal-dump.js");
    const fmt = formatOf(p);
    const dump = await dumpLog(await realFs(), file);
    if (dump.notALog !== undefined) {
      throw new Error(`${file} is not a write-ahead log: ${dump.notALog}`);
    }
    if (p.values.json === true) process.stdout.write(`${JSON.stringify(walJson(fmt, dump))}\n`);
    else print(walText(fmt, dump));
    const damaged =
      dump.damage.some((d) => d.kind === "corruption") ||
      dump.records.some((r) => r.problem !== undefined);
    return damaged ? EXIT_FAILURE : EXIT_OK;
  });
}

function manifestDump(argv: string[]): Promise<number> {
  const options = { ...OPTIONS, "num-levels": { type: "string" } } as const;
  return runCommand("manifest dump", MANIFEST_DUMP_USAGE, argv, options, async (p) => {
    const { storeDirOf } = await import("./store-dir.js");
    const { dir } = storeDirOf(target(p, "DIR"), "manifest dump");
    const numLevels = intOption(p, "num-levels", 2, 64);
    const { dumpManifest } = await import("../tools/manifest-dump.js");
    const fmt = formatOf(p);
    const dump = await dumpManifest(await realFs(), dir, numLevels);
    if (p.values.json === true) {
      process.stdout.write(`${JSON.stringify(manifestJson(fmt, dump))}\n`);
    } else {
      print(manifestText(fmt, dump));
      print(dump.problems.map((x) => `problem: ${x}`));
    }
    return dump.problems.length === 0 ? EXIT_OK : EXIT_FAILURE;
  });
}

const DUMPS: Record<string, { usage: string; run: (argv: string[]) => Promise<number> }> = {
  sst: { usage: SST_DUMP_USAGE, run: sstDump },
  wal: { usage: WAL_DUMP_USAGE, run: walDump },
  manifest: { usage: MANIFEST_DUMP_USAGE, run: manifestDump },
};

/** `kv-engine sst|wal|manifest ...`: `dump` is the one action; `--help` prints its usage. */
export async function inspectCommand(command: string, argv: string[]): Promise<number> {
  const dump = DUMPS[command];
  if (dump === undefined) throw new Error(`not an inspection command: ${command}`);
  const { command: action, args } = splitCommand(argv);
  if (action === "dump") return dump.run(args);
  if (action === undefined && (args.includes("--help") || args.includes("-h"))) {
    process.stdout.write(dump.usage);
    return EXIT_OK;
  }
  const problem = action === undefined ? "missing action" : `unknown action '${action}'`;
  process.stderr.write(
    `kv-engine ${command}: ${problem} (expected 'dump')\n${usageLine(dump.usage)}\n` +
      `Run 'kv-engine ${command} dump --help' for its options.\n`,
  );
  return EXIT_USAGE;
}
