#!/usr/bin/env node
/**
 * The `kv-engine` command: `serve` runs the gRPC server; `put`, `get`, `del` and `scan`
 * call one; `verify` and `repair` check and repair a data directory offline; `sst dump`,
 * `wal dump` and `manifest dump` print a store's files; `compact`, `backup` and `stats`
 * open a data directory (docs/tools.md). Each subcommand prints its own --help; exit codes
 * are 0 (success), 1 (failure, reason on stderr) and 2 (bad usage).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { EXIT_OK, EXIT_USAGE } from "./command.js";

/** Client subcommands (client-commands.ts); modules load on use, so `--help` stays quick. */
const CLIENT_COMMANDS = ["put", "get", "del", "scan"];
/** File inspection (inspect-commands.ts): `kv-engine sst|wal|manifest dump ...`. */
const INSPECT_COMMANDS = ["sst", "wal", "manifest"];

const USAGE = `Usage: kv-engine <command> [options]

Commands:
  serve          serve a data directory over gRPC (kv-engine serve --help)
  put KEY VALUE  store a value on a server
  get KEY        print a value from a server
  del KEY        delete a key on a server
  scan           print a range of rows from a server
  verify         check every file of a data directory (kv-engine verify --help)
  repair         rebuild a damaged data directory's manifest (kv-engine repair --help)
  sst dump FILE  print a table file: properties, index, filter, entries
  wal dump FILE  print a write-ahead log's records and where damage starts
  manifest dump DIR
                 print the version history in a data directory's manifest
  compact        compact a data directory (a key range or all), with progress
  backup         copy a data directory as a checkpoint (hard links where possible)
  stats          print a data directory's per-level statistics
  version        print the version of kv-engine
  help           print this help

Run 'kv-engine <command> --help' for the options of a command.

Options:
  -h, --help     print this help
  -v, --version  print the version
`;

function version(): string {
  const pkg = JSON.parse(
    readFileSync(new URL("../../../package.json", import.meta.url), "utf8"),
  ) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  const command = argv[0];
  if (command === "serve") {
    const { serveCommand } = await import("./serve-command.js");
    return serveCommand(argv.slice(1));
  }
  if (command === "verify" || command === "repair") {
    const { verifyCommand, repairCommand } = await import("./tool-commands.js");
    return command === "verify" ? verifyCommand(argv.slice(1)) : repairCommand(argv.slice(1));
  }
  if (command !== undefined && INSPECT_COMMANDS.includes(command)) {
    const { inspectCommand } = await import("./inspect-commands.js");
    return inspectCommand(command, argv.slice(1));
  }
  if (command === "compact" || command === "backup" || command === "stats") {
    const store = await import("./store-commands.js");
    const run = {
      compact: store.compactCommand,
      backup: store.backupCommand,
      stats: store.statsCommand,
    };
    return run[command](argv.slice(1));
  }
  if (command !== undefined && CLIENT_COMMANDS.includes(command)) {
    const { clientCommand } = await import("./client-commands.js");
    return clientCommand(command, argv.slice(1));
  }
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
    allowPositionals: true,
    strict: false,
  });
  if (values.version === true || command === "version") {
    process.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  if (values.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return EXIT_OK;
  }
  process.stderr.write(`kv-engine: unknown command '${command}'\n\n${USAGE}`);
  return EXIT_USAGE;
}

process.exitCode = await main(process.argv.slice(2));
