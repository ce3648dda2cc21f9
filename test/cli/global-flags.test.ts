/**
 * Where options may stand: before the command as well as after it (`kv-engine --addr H:P
 * get K`), --help and --version anywhere, `kv-engine help COMMAND`; and the table that
 * makes this work (VALUE_OPTIONS, the options that take a value) agrees with every
 * command's --help. Real processes.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { hasFlag, splitCommand, VALUE_OPTIONS } from "../../src/cli/command.js";
import { runCli } from "../support/server-process.js";

const VERSION = (
  JSON.parse(
    readFileSync(fileURLToPath(new URL("../../../package.json", import.meta.url)), "utf8"),
  ) as { version: string }
).version;

test("splitCommand finds the command after options and their values", () => {
  assert.deepEqual(splitCommand(["--addr", "h:1", "--json", "get", "k"]), {
    command: "get",
    args: ["--addr", "h:1", "--json", "k"],
  });
  assert.deepEqual(splitCommand(["--addr=h:1", "scan"]), { command: "scan", args: ["--addr=h:1"] });
  assert.deepEqual(splitCommand(["--json"]), { command: undefined, args: ["--json"] });
  // A `--` before the command stays before the command's arguments.
  assert.deepEqual(splitCommand(["--addr", "h:1", "--", "put", "k", "-v"]), {
    command: "put",
    args: ["--addr", "h:1", "--", "k", "-v"],
  });
  assert.deepEqual(splitCommand(["--"]), { command: undefined, args: ["--"] });
  assert.ok(hasFlag(["get", "k", "--version"], "--version"));
  assert.ok(!hasFlag(["put", "--", "k", "--version"], "--version"), "after -- it is a value");
  assert.ok(!hasFlag(["scan", "--start", "-v"], "-v"), "the value of an option");
});

test("options before the command are the command's", async () => {
  const down = await runCli(["--addr", "127.0.0.1:1", "--timeout-ms", "2000", "get", "k"]);
  assert.equal(down.code, 1, down.stderr);
  assert.match(down.stderr, /^kv-engine get: UNAVAILABLE/);
  const dump = await runCli(["--json", "wal", "--hex", "dump", "/nonexistent/000001.log"]);
  assert.equal(dump.code, 1, dump.stderr);
  assert.match(dump.stderr, /^kv-engine wal dump: .*ENOENT/);
  const bad = await runCli(["--bogus", "get", "k"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^kv-engine get: unknown option '--bogus'/);
});

test("--version and --help work in any position", async () => {
  for (const args of [["--version"], ["get", "--version"], ["serve", "-v"], ["version"]]) {
    const r = await runCli(args);
    assert.deepEqual([r.code, r.stdout], [0, `${VERSION}\n`], args.join(" "));
  }
  for (const args of [
    ["--help", "get"],
    ["get", "--help"],
    ["help", "get"],
    ["--addr", "h:1", "get", "-h"],
  ]) {
    const r = await runCli(args);
    assert.equal(r.code, 0, args.join(" "));
    assert.match(r.stdout, /^Usage: kv-engine get /, args.join(" "));
  }
  const dump = await runCli(["--help", "sst", "dump"]);
  assert.match(dump.stdout, /^Usage: kv-engine sst dump FILE/);
  const top = await runCli(["--help"]);
  assert.match(top.stdout, /^Usage: kv-engine <command>/);
});

test("VALUE_OPTIONS lists exactly the options that take a value in some command's help", async () => {
  const commands = [
    ["serve"],
    ["put"],
    ["get"],
    ["del"],
    ["scan"],
    ["cas"],
    ["cluster"],
    ["verify"],
    ["repair"],
    ["compact"],
    ["backup"],
    ["stats"],
    ["upgrade"],
    ["restore"],
    ["sst", "dump"],
    ["wal", "dump"],
    ["manifest", "dump"],
    ["watch"],
    ["lease"],
    ["txn"],
    ["lock"],
    ["elect"],
    ["compaction"],
    ["endpoint"],
    ["alarm"],
    ["snapshot"],
  ];
  const helps = await Promise.all(commands.map((c) => runCli([...c, "--help"])));
  const withValue = new Set<string>();
  const flags = new Set<string>();
  for (const [i, r] of helps.entries()) {
    assert.equal(r.code, 0, commands[i]!.join(" "));
    for (const line of r.stdout.split("\n")) {
      const m = /^\s+(?:-[a-z], )?--([a-z][a-z-]*)( [A-Z][A-Z0-9:]*)?(?:\s|$)/.exec(line);
      if (m === null) continue;
      (m[2] === undefined ? flags : withValue).add(m[1]!);
    }
  }
  assert.deepEqual([...withValue].sort(), [...VALUE_OPTIONS].sort());
  assert.deepEqual(
    [...flags].filter((f) => VALUE_OPTIONS.has(f)),
    [],
    "no option is a flag in one command and takes a value in another",
  );
});
