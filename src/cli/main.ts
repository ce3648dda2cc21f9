#!/usr/bin/env node
/**
 * The `kv-engine` command. Subcommands are added as the project grows (serve, get, put,
 * verify, ...); each prints its own --help and exits non-zero on failure.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const USAGE = `Usage: kv-engine <command> [options]

Commands:
  version        print the version of kv-engine
  help           print this help

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

export function main(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
    allowPositionals: true,
    strict: false,
  });
  const command = positionals[0];
  if (values.version === true || command === "version") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (values.help === true || command === undefined || command === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  process.stderr.write(`kv-engine: unknown command '${command}'\n\n${USAGE}`);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
