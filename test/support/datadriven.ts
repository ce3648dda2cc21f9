/**
 * Data-driven tests in the style of Pebble's (and CockroachDB's) `datadriven` package: a
 * text file holds cases, each a command line with `key=value` arguments, input lines, a
 * `----` line and the expected output, up to a blank line:
 *
 *     # what the case shows (comment lines start with #)
 *     compact snapshots=3,7
 *     a#10,PUT = x
 *     a#5,PUT = y
 *     ----
 *     a#10,PUT = x
 *
 * `runDataDriven` runs every case of a file as a subtest and compares the output with the
 * expected lines. With KV_REWRITE=1 it writes the actual outputs into the file instead
 * (then review the diff), so that a change of behaviour is one command and a reviewed diff.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { test } from "node:test";

export interface DataDrivenCase {
  /** 1-based line of the command. */
  readonly line: number;
  readonly command: string;
  /** Arguments of the command line: `name=value` (value "" for a bare `name`). */
  readonly args: ReadonlyMap<string, string>;
  readonly input: readonly string[];
  readonly expected: readonly string[];
}

interface Parsed {
  cases: DataDrivenCase[];
  /** The file's lines, with each case's expected lines at [start, end). */
  lines: string[];
  spans: Array<{ start: number; end: number }>;
}

function parse(path: string): Parsed {
  const lines = readFileSync(path, "utf8").split("\n");
  const cases: DataDrivenCase[] = [];
  const spans: Array<{ start: number; end: number }> = [];
  let i = 0;
  while (i < lines.length) {
    const text = lines[i]!;
    if (text.trim() === "" || text.startsWith("#")) {
      i++;
      continue;
    }
    const line = i + 1;
    const [command, ...words] = text.trim().split(/\s+/);
    const args = new Map<string, string>();
    for (const w of words) {
      const eq = w.indexOf("=");
      args.set(eq < 0 ? w : w.slice(0, eq), eq < 0 ? "" : w.slice(eq + 1));
    }
    i++;
    const input: string[] = [];
    while (i < lines.length && lines[i] !== "----") {
      if (lines[i]!.trim() === "") throw new Error(`${path}:${line}: no ---- after the input`);
      input.push(lines[i]!);
      i++;
    }
    if (i >= lines.length) throw new Error(`${path}:${line}: no ---- after the input`);
    i++;
    const start = i;
    while (i < lines.length && lines[i]!.trim() !== "") i++;
    spans.push({ start, end: i });
    cases.push({ line, command: command!, args, input, expected: lines.slice(start, i) });
  }
  return { cases, lines, spans };
}

/**
 * Runs each case of the file at `path` as a test named `<name>:<line> <command>`; `run`
 * returns the output lines. KV_REWRITE=1: rewrites the expected outputs instead.
 */
export function runDataDriven(
  path: string,
  name: string,
  run: (c: DataDrivenCase) => string[] | Promise<string[]>,
): void {
  const parsed = parse(path);
  if (process.env["KV_REWRITE"] !== undefined) {
    test(`${name}: rewrite the expected outputs (KV_REWRITE)`, async () => {
      const outputs: string[][] = [];
      for (const c of parsed.cases) outputs.push(await run(c));
      const out: string[] = [];
      let at = 0;
      parsed.spans.forEach((span, k) => {
        out.push(...parsed.lines.slice(at, span.start), ...outputs[k]!);
        at = span.end;
      });
      out.push(...parsed.lines.slice(at));
      writeFileSync(path, out.join("\n"));
    });
    return;
  }
  for (const c of parsed.cases) {
    test(`${name}:${c.line} ${c.command}`, async () => {
      assert.deepEqual(
        await run(c),
        c.expected,
        `${name}:${c.line}: output differs (KV_REWRITE=1 rewrites the file)`,
      );
    });
  }
}
