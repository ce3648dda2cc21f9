/**
 * What every subcommand shares: parsing its options (node:util parseArgs, strict), its
 * --help, the key and value formats, a quiet exit when the reader of the output is gone,
 * and exit codes: 0 success, 1 failure (the reason on stderr), 2 bad usage (the reason
 * and the command's usage line on stderr).
 */
import { readFileSync } from "node:fs";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { type ByteFormat, byteFormat } from "./byte-format.js";
import { inOurWords } from "./etcd-failures.js";
import type { StoreDir } from "./store-dir.js";

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A problem with how the command was called: reported with the usage text, exit 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Parses `argv` against `options` (plus -h/--help); throws UsageError on unknown or
 * malformed options, saying what is wrong in our words (parseArgs's own texts are not
 * shown). Everything after `--` is positional.
 */
export function parseCommand(argv: string[], options: Options): Parsed {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Parsed["values"], positionals };
  } catch (err) {
    throw new UsageError(parseErrorText(err, argv));
  }
}

/** A parseArgs error as our message. */
function parseErrorText(err: unknown, argv: readonly string[]): string {
  const message = err instanceof Error ? err.message : String(err);
  const option = /^(?:Unknown option|Option) '(-{1,2}[^' =<]+)/.exec(message)?.[1];
  const code = (err as { code?: unknown }).code;
  if (option === undefined) return message;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    return `unknown option '${option}' (a KEY or VALUE starting with '-' goes after '--', as in: put -- -k -v)`;
  }
  if (/argument is ambiguous/.test(message)) {
    const value = argv[argv.indexOf(option) + 1] ?? "";
    return `the value of ${option} starts with '-': write it ${option}=${value}`;
  }
  if (/does not take an argument/.test(message)) return `${option} takes no value`;
  if (/argument missing/.test(message)) return `${option} needs a value`;
  return message;
}

export function stringOption(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === "string" ? v : undefined;
}

/** An integer option in [min, max]; undefined when absent. */
export function intOption(p: Parsed, name: string, min: number, max: number): number | undefined {
  const text = stringOption(p, name);
  if (text === undefined) return undefined;
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got '${text}'`);
  }
  return n;
}

/** The contents of the file named by option `name`, or undefined when the option is absent. */
export function fileOption(p: Parsed, name: string): Buffer | undefined {
  const path = stringOption(p, name);
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read --${name} ${path}: ${err instanceof Error ? err.message : err}`);
  }
}

/** The token in the file named by option `name` (surrounding whitespace removed). */
export function tokenOption(p: Parsed, name: string): string | undefined {
  const bytes = fileOption(p, name);
  if (bytes === undefined) return undefined;
  const token = bytes.toString("utf8").trim();
  if (token.length === 0) throw new Error(`--${name} ${stringOption(p, name)} is empty`);
  return token;
}

/**
 * The message for a failure: a KvError's code goes first ("LOCKED: DIR is in use ..."), so
 * the kind of failure shows without reading on (the class is recognized by name, so that
 * loading this module does not load the engine); etcd's texts are said in ours
 * (etcd-failures.ts).
 */
export function failureMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  if (err.name === "KvError" && typeof code === "string" && !err.message.startsWith(code)) {
    return `${code}: ${err.message}`;
  }
  return inOurWords(err.message);
}

/** The first line of a usage text ("Usage: kv-engine put [options] KEY VALUE"). */
export function usageLine(usage: string): string {
  const end = usage.indexOf("\n");
  return end < 0 ? usage : usage.slice(0, end);
}

/** What a usage error prints: the reason, the command's usage line and where its help is. */
export function usageErrorText(name: string, message: string, usage: string): string {
  return (
    `kv-engine ${name}: ${message}\n${usageLine(usage)}\n` +
    `Run 'kv-engine ${name} --help' for its options.\n`
  );
}

/** Runs a subcommand body: prints its help, maps errors to exit codes and messages. */
export async function runCommand(
  name: string,
  usage: string,
  argv: string[],
  options: Options,
  body: (p: Parsed) => Promise<number>,
): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parseCommand(argv, options);
    if (parsed.values.help === true) {
      process.stdout.write(usage);
      return EXIT_OK;
    }
    return await body(parsed);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(usageErrorText(name, err.message, usage));
      return EXIT_USAGE;
    }
    process.stderr.write(`kv-engine ${name}: ${failureMessage(err)}\n`);
    return EXIT_FAILURE;
  }
}

/** The options of the commands that work on a data directory offline. */
export const STORE_DIR_OPTIONS = {
  "data-dir": { type: "string" },
  "num-levels": { type: "string" },
  json: { type: "boolean" },
} as const;

/**
 * --data-dir, required; no positional arguments allowed beside it. For a cluster member's
 * data directory, the store inside it (store-dir.ts; `command` names the command in the
 * note it prints).
 */
export async function dataDirOption(p: Parsed, command: string): Promise<StoreDir> {
  const dir = stringOption(p, "data-dir");
  if (dir === undefined || dir.length === 0) throw new UsageError("--data-dir is required");
  if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
  const { storeDirOf } = await import("./store-dir.js");
  return storeDirOf(dir, command);
}

/** --num-levels as open options (`{}` when absent). */
export function levelOptions(p: Parsed): { numLevels?: number } {
  const numLevels = intOption(p, "num-levels", 2, 64);
  return numLevels === undefined ? {} : { numLevels };
}

/** --hex (keys and values), --key-hex, --value-hex: how keys and values are read and shown. */
export const BYTE_FORMAT_OPTIONS = {
  hex: { type: "boolean" },
  "key-hex": { type: "boolean" },
  "value-hex": { type: "boolean" },
} as const;

export interface ByteFormats {
  key: ByteFormat;
  value: ByteFormat;
}

/** The key and value formats of BYTE_FORMAT_OPTIONS (--hex is --key-hex plus --value-hex). */
export function byteFormatsOf(p: Parsed): ByteFormats {
  const hex = p.values.hex === true;
  return {
    key: byteFormat(hex || p.values["key-hex"] === true, "--key-hex"),
    value: byteFormat(hex || p.values["value-hex"] === true, "--value-hex"),
  };
}

/**
 * Makes the process exit 0, silently, once a write to stdout or stderr finds the reader
 * gone (EPIPE: `kv-engine scan | head -2`): the reader chose to stop reading, so there is
 * nothing to report. Other stream errors are thrown, as without a listener.
 * `serve` does not call this: a server keeps serving when its output's reader goes.
 */
export function exitQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(EXIT_OK);
      throw err;
    });
  }
}

/**
 * Every option of any command that takes a value (`--name VALUE`): what lets options stand
 * before the command (`kv-engine --addr H:P get K`) without taking their value for the
 * command. test/cli/global-flags.test.ts checks it against every command's --help.
 */
export const VALUE_OPTIONS: ReadonlySet<string> = new Set([
  "addr",
  "advertise-client-address",
  "auth-token-file",
  "auto-compaction-mode",
  "auto-compaction-retention",
  "backup-dir",
  "catch-up-entries",
  "check-after-ms",
  "client-address",
  "corrupt-check-interval-ms",
  "data-dir",
  "election-ticks",
  "else",
  "end",
  "expect",
  "host",
  "if",
  "initial-cluster",
  "initial-cluster-state",
  "initial-cluster-token",
  "initial-snapshot",
  "join-timeout-ms",
  "limit",
  "log-level",
  "max-key-bytes",
  "max-message-bytes",
  "max-receive-bytes",
  "max-request-bytes",
  "max-streams",
  "max-txn-ops",
  "max-value-bytes",
  "metrics-port",
  "name",
  "num-levels",
  "out",
  "peer-address",
  "peer-dial-override",
  "peer-host",
  "peer-port",
  "peer-tls-ca",
  "peer-tls-cert",
  "peer-tls-key",
  "peer-tls-server-name",
  "port",
  "quota-backend-bytes",
  "rev",
  "scan-batch-bytes",
  "shutdown-grace-ms",
  "snapshot",
  "snapshot-entries",
  "start",
  "then",
  "tick-ms",
  "timeout-ms",
  "tls-ca",
  "tls-cert",
  "tls-client-ca",
  "tls-key",
  "tls-server-name",
  "to",
  "transport",
  "ttl",
  "value",
  "value-file",
]);

/** True iff `arg` is an option (`-x`, `--name`, `--name=value`), not a positional or "-". */
function isOption(arg: string): boolean {
  return arg.length > 1 && arg.startsWith("-");
}

/** True iff option token `arg` takes the next argument as its value. */
function takesValue(arg: string): boolean {
  return arg.startsWith("--") && !arg.includes("=") && VALUE_OPTIONS.has(arg.slice(2));
}

/**
 * Splits `argv` at its first positional argument (the command, or a command's action):
 * options before it stay options of what follows, so `--json get K` is `get --json K`.
 * Everything after a `--` is positional: a `--` before the command stays before what
 * follows the command (`--addr A -- put K -V` is `put --addr A -- K -V`). `command` is
 * undefined when there is none.
 */
export function splitCommand(argv: readonly string[]): {
  command: string | undefined;
  args: string[];
} {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      if (i + 1 >= argv.length) break;
      return { command: argv[i + 1], args: [...argv.slice(0, i), "--", ...argv.slice(i + 2)] };
    }
    if (isOption(arg)) {
      if (takesValue(arg)) i++;
      continue;
    }
    return { command: arg, args: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { command: undefined, args: [...argv] };
}

/** True iff option `names` (e.g. "-v", "--version") is given anywhere before a `--`. */
export function hasFlag(argv: readonly string[], ...names: string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") return false;
    if (names.includes(arg)) return true;
    if (isOption(arg) && takesValue(arg)) i++;
  }
  return false;
}
