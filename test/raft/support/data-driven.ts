/**
 * Data-driven test files in the style of cockroachdb/datadriven (used by etcd-raft and
 * Pebble): blocks of
 *
 *   # comments and blank lines (kept on rewrite)
 *   command arg key=value key=(a,b)
 *   optional input lines
 *   ----
 *   expected output
 *   <blank line>
 *
 * An output that contains blank lines is written between `----\n----` and `----\n----`.
 * `runDataDriven` runs each block's command and compares its output; with KV_REWRITE=1 it
 * writes the actual outputs back into the file instead.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";

export interface CommandArg {
  readonly key: string;
  /** The list for key=(a,b), one value for key=v, none for a bare word. */
  readonly values: readonly string[];
  /** True for a bare word (no `=`). */
  readonly bare: boolean;
}

export interface TestCommand {
  readonly name: string;
  readonly args: readonly CommandArg[];
  readonly input: readonly string[];
  /** 1-based line of the command, for messages. */
  readonly line: number;
}

interface Block {
  readonly prefix: string[];
  readonly command: TestCommand;
  readonly header: string[];
  readonly expected: string;
}

function parseArgs(text: string): CommandArg[] {
  const out: CommandArg[] = [];
  const re = /(\S+?)=\(([^)]*)\)|(\S+?)=(\S+)|(\S+)/g;
  for (const m of text.matchAll(re)) {
    if (m[1] !== undefined) {
      const list = m[2]!.trim();
      out.push({ key: m[1], values: list === "" ? [] : list.split(/[\s,]+/), bare: false });
    } else if (m[3] !== undefined) {
      out.push({ key: m[3], values: [m[4]!], bare: false });
    } else {
      out.push({ key: m[5]!, values: [], bare: true });
    }
  }
  return out;
}

function parse(text: string): { blocks: Block[]; trailer: string[] } {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const blocks: Block[] = [];
  let prefix: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "" || line.startsWith("#")) {
      prefix.push(line);
      i++;
      continue;
    }
    const start = i;
    const header: string[] = [line];
    i++;
    while (i < lines.length && lines[i] !== "----") header.push(lines[i++]!);
    if (i >= lines.length) throw new Error(`line ${start + 1}: command without ----`);
    i++; // ----
    let expected: string[] = [];
    if (lines[i] === "----") {
      i++;
      while (i < lines.length && !(lines[i] === "----" && lines[i + 1] === "----"))
        expected.push(lines[i++]!);
      i += 2;
      if (lines[i] === "") i++;
    } else {
      while (i < lines.length && lines[i] !== "") expected.push(lines[i++]!);
      i++;
    }
    const [name, ...rest] = line.trim().split(/\s+/);
    const command: TestCommand = {
      name: name!,
      args: parseArgs(rest.join(" ")),
      input: header.slice(1),
      line: start + 1,
    };
    blocks.push({ prefix, command, header, expected: expected.join("\n") });
    prefix = [];
    expected = [];
  }
  return { blocks, trailer: prefix };
}

function render(header: readonly string[], output: string): string {
  const body = output.trimEnd();
  if (body.split("\n").some((l) => l.trim() === "")) {
    return `${header.join("\n")}\n----\n----\n${body}\n----\n----\n`;
  }
  return `${header.join("\n")}\n----\n${body === "" ? "" : `${body}\n`}`;
}

/** Runs every block of `path` through `run`; rewrites the file when KV_REWRITE=1. */
export function runDataDriven(path: string, run: (cmd: TestCommand) => string): void {
  const text = readFileSync(path, "utf8");
  const { blocks, trailer } = parse(text);
  const rewrite = process.env["KV_REWRITE"] === "1";
  let out = "";
  for (const b of blocks) {
    let actual: string;
    try {
      actual = run(b.command).trimEnd();
    } catch (err) {
      throw new Error(
        `${path}:${b.command.line}: ${b.command.name} failed: ${(err as Error).stack}`,
      );
    }
    if (rewrite) {
      out += b.prefix.map((l) => `${l}\n`).join("");
      out += `${render(b.header, actual)}\n`;
    } else {
      assert.equal(actual, b.expected.trimEnd(), `${path}:${b.command.line}: ${b.header[0]}`);
    }
  }
  if (rewrite) {
    out += trailer.map((l) => `${l}\n`).join("");
    writeFileSync(path, `${out.trimEnd()}\n`);
  }
}

/** Helpers for command arguments. */
export function positional(cmd: TestCommand): string[] {
  return cmd.args.filter((a) => a.bare).map((a) => a.key);
}

export function option(cmd: TestCommand, key: string): readonly string[] | undefined {
  return cmd.args.find((a) => !a.bare && a.key === key)?.values;
}
