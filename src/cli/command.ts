/**
 * What every subcommand shares: parsing its options (node:util parseArgs, strict), its
 * --help, and exit codes: 0 success, 1 failure (the reason on stderr), 2 bad usage.
 */
import { readFileSync } from "node:fs";
import { type ParseArgsConfig, parseArgs } from "node:util";

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

/** Parses `argv` against `options` (plus -h/--help); throws UsageError on unknown or malformed options. */
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
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
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
 * loading this module does not load the engine).
 */
export function failureMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  if (err.name === "KvError" && typeof code === "string" && !err.message.startsWith(code)) {
    return `${code}: ${err.message}`;
  }
  return err.message;
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
      process.stderr.write(`kv-engine ${name}: ${err.message}\n\n${usage}`);
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

/** --data-dir, required; no positional arguments allowed beside it. */
export function dataDirOption(p: Parsed): string {
  const dir = stringOption(p, "data-dir");
  if (dir === undefined || dir.length === 0) throw new UsageError("--data-dir is required");
  if (p.positionals.length > 0) throw new UsageError(`unexpected argument '${p.positionals[0]}'`);
  return dir;
}

/** --num-levels as open options (`{}` when absent). */
export function levelOptions(p: Parsed): { numLevels?: number } {
  const numLevels = intOption(p, "num-levels", 2, 64);
  return numLevels === undefined ? {} : { numLevels };
}
