#!/usr/bin/env node
/**
 * The `kv-engine` command: `serve` runs the gRPC server; `put`, `get`, `del` and `scan`
 * call one (kv.v1); `watch`, `lease`, `txn`, `lock`, `elect`, `compaction`, `endpoint`,
 * `alarm` and `snapshot` call etcd's v3 API (kv-engine's or etcd's); `verify` and `repair` check and repair a data directory offline; `sst dump`,
 * `wal dump` and `manifest dump` print a store's files; `compact`, `backup` and `stats`
 * open a data directory (docs/tools.md). Each subcommand prints its own --help; exit codes
 * are 0 (success), 1 (failure, reason on stderr) and 2 (bad usage).
 */
import { readFileSync } from "node:fs";
import {
  CLIENT_PEERS,
  MissingPeersError,
  requirePeers,
  SERVE_PEERS,
} from "../util/optional-peers.js";
import {
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  exitQuietlyOnClosedPipe,
  hasFlag,
  splitCommand,
  usageLine,
} from "./command.js";

/** Client subcommands (client-commands.ts); modules load on use, so `--help` stays quick. */
const CLIENT_COMMANDS = ["put", "get", "del", "scan", "cas"];
/** Commands over etcd's v3 API, each in its module (loaded on use). */
const ETCD_COMMANDS: Record<string, () => Promise<(argv: string[]) => Promise<number>>> = {
  watch: async () => (await import("./watch-command.js")).watchCommand,
  lease: async () => (await import("./lease-commands.js")).leaseCommand,
  txn: async () => (await import("./etcd-kv-commands.js")).txnCommand,
  compaction: async () => (await import("./etcd-kv-commands.js")).compactionCommand,
  lock: async () => (await import("./concurrency-commands.js")).lockCommand,
  elect: async () => (await import("./concurrency-commands.js")).electCommand,
  endpoint: async () => (await import("./endpoint-commands.js")).endpointCommand,
  alarm: async () => (await import("./alarm-commands.js")).alarmCommand,
  snapshot: async () => (await import("./snapshot-commands.js")).snapshotCommand,
};
/** File inspection (inspect-commands.ts): `kv-engine sst|wal|manifest dump ...`. */
const INSPECT_COMMANDS = ["sst", "wal", "manifest"];
const USAGE = `Usage: kv-engine <command> [options]

Commands:
  serve          serve a data directory over gRPC (kv-engine serve --help)

 Over the kv.v1 API (kv-engine's own):
  put KEY VALUE  store a value on a server
  get KEY        print a value from a server (--rev N: at a revision, over etcd's API)
  del KEY        delete a key on a server
  scan           print a range of rows from a server
  cas KEY        compare-and-swap a key on a server (kv-engine cas --help)
  cluster        list, add (--learner), promote, remove members; transfer leadership;
                 status (kv-engine cluster --help)

 Over etcd's v3 API (kv-engine and etcd 3.4 alike):
  watch KEY      print the changes of a key or prefix as they happen, until interrupted
  lease          grant, revoke, keep-alive, ttl, list leases
  txn            one transaction: compares, then/else ops (flags or JSON on stdin)
  lock NAME      hold a lock until interrupted, or while a command runs
  elect NAME     campaign in an election (or --listen to its leaders)
  compaction REV discard the history of etcd's API below a revision
  endpoint       status, health, hashkv of each endpoint
  alarm          list or disarm alarms (NOSPACE, CORRUPT)
  snapshot       save a server's snapshot to a file; restore one into a directory

 On a data directory (or, with --addr, through the admin service):
  verify         check every file of a data directory (kv-engine verify --help)
  repair         salvage a damaged data directory (kv-engine repair --help)
  sst dump FILE  print a table file: properties, index, filter, entries
  wal dump FILE  print a write-ahead log's records and where damage starts
  manifest dump DIR
                 print the version history in a data directory's manifest
  compact        compact a data directory or, with --addr, a server's store, with progress
                 (the LSM's compaction; etcd's is 'compaction')
  backup         checkpoint a data directory, or a server's store into its --backup-dir
  stats          print the per-level statistics of a data directory or a server's store
  upgrade        copy a store written before revisions into one with them (for etcd's API)
  restore        write the store of an etcd API snapshot (snapshot save) into a directory
  version        print the version of kv-engine
  help           print this help

Run 'kv-engine <command> --help' for the options of a command. Options may stand before
or after the command (kv-engine --addr H:P get KEY); --help and --version work anywhere.
Every command that calls a server takes --addr, TLS, --timeout-ms and --json.

Options:
  -h, --help     print this help (with a command: that command's)
  -v, --version  print the version
`;

function version(): string {
  const pkg = JSON.parse(
    readFileSync(new URL("../../../package.json", import.meta.url), "utf8"),
  ) as { version: string };
  return pkg.version;
}

async function run(command: string, args: string[]): Promise<number | undefined> {
  if (command === "serve") {
    requirePeers("this command", SERVE_PEERS);
    // Before the server's modules load: their hot functions optimise after fewer calls.
    const { tierUpEarly } = await import("./early-tier-up.js");
    tierUpEarly();
    const { serveCommand } = await import("./serve-command.js");
    return serveCommand(args);
  }
  exitQuietlyOnClosedPipe();
  if (command === "verify" || command === "repair") {
    const { verifyCommand, repairCommand } = await import("./tool-commands.js");
    return command === "verify" ? verifyCommand(args) : repairCommand(args);
  }
  if (INSPECT_COMMANDS.includes(command)) {
    const { inspectCommand } = await import("./inspect-commands.js");
    return inspectCommand(command, args);
  }
  if (
    command === "compact" ||
    command === "backup" ||
    command === "stats" ||
    command === "upgrade" ||
    command === "restore"
  ) {
    const store = await import("./store-commands.js");
    const commands = {
      compact: store.compactCommand,
      backup: store.backupCommand,
      stats: store.statsCommand,
      upgrade: store.upgradeCommand,
      restore: store.restoreCommand,
    };
    return commands[command](args);
  }
  if (command === "cluster") {
    requirePeers("this command", CLIENT_PEERS);
    const { clusterCommand } = await import("./cluster-commands.js");
    return clusterCommand(args);
  }
  const etcd = Object.hasOwn(ETCD_COMMANDS, command) ? ETCD_COMMANDS[command] : undefined;
  if (etcd !== undefined) {
    requirePeers("this command", CLIENT_PEERS);
    return (await etcd())(args);
  }
  if (CLIENT_COMMANDS.includes(command)) {
    requirePeers("this command", CLIENT_PEERS);
    const { clientCommand } = await import("./client-commands.js");
    return clientCommand(command, args);
  }
  return undefined;
}

export async function main(argv: string[]): Promise<number> {
  if (hasFlag(argv, "-v", "--version")) {
    process.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  let { command, args } = splitCommand(argv);
  if (command === "help" && args.length > 0) {
    // `kv-engine help COMMAND`: that command's help.
    ({ command, args } = splitCommand(args));
    args.push("--help");
  }
  if (command === undefined || command === "help") {
    if (command === undefined && !hasFlag(argv, "-h", "--help") && argv.length > 0) {
      process.stderr.write(
        `kv-engine: no command given\n${usageLine(USAGE)}\nRun 'kv-engine --help' for the commands.\n`,
      );
      return EXIT_USAGE;
    }
    process.stdout.write(USAGE);
    return EXIT_OK;
  }
  if (command === "version") {
    process.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  try {
    const code = await run(command, args);
    if (code !== undefined) return code;
  } catch (err) {
    if (!(err instanceof MissingPeersError)) throw err;
    process.stderr.write(`kv-engine ${command}: ${err.message}\n`);
    return EXIT_FAILURE;
  }
  process.stderr.write(
    `kv-engine: unknown command '${command}'\n${usageLine(USAGE)}\n` +
      "Run 'kv-engine --help' for the commands.\n",
  );
  return EXIT_USAGE;
}

process.exitCode = await main(process.argv.slice(2));
