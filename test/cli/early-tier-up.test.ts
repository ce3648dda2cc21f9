/**
 * `kv-engine serve` optimises hot functions after fewer calls (src/cli/early-tier-up.ts):
 * the flags are set by the serve command and only there; a function is optimised by
 * TurboFan after tens of calls instead of hundreds; flags given on node's command line
 * win. Real child processes (V8 flags are per process).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const MODULE = fileURLToPath(new URL("../../src/cli/early-tier-up.js", import.meta.url));

/**
 * A script that reports the calls a small function (a loop over 4 numbers) needed to be
 * optimised by TurboFan (at most 2,000). Deterministic: compiled on the main thread.
 */
function probeScript(callTierUp: boolean): string {
  return `
${callTierUp ? `(await import(${JSON.stringify(MODULE)})).tierUpEarly();` : ""}
function work(a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 3; return s; }
const numbers = [1, 2, 3, 4];
let calls = 0;
while (calls < 2000 && !(%GetOptimizationStatus(work) & 64)) { work(numbers); calls++; }
console.log(calls);`;
}

async function callsToOptimise(dir: string, callTierUp: boolean): Promise<number> {
  const file = join(dir, `probe-${callTierUp}.mjs`);
  writeFileSync(file, probeScript(callTierUp));
  const { stdout } = await run(process.execPath, [
    "--allow-natives-syntax",
    "--no-concurrent-recompilation",
    file,
  ]);
  return Number(stdout.trim());
}

test("tierUpEarly: a small hot function is optimised after tens of calls, not hundreds", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "kv-tier-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const early = await callsToOptimise(dir, true);
  const standard = await callsToOptimise(dir, false);
  // Node 20's V8: ~60 and ~460 calls (status bit 64: TurboFan code).
  assert.ok(early <= 120, `optimised after ${early} calls with the early flags`);
  assert.ok(2 * early <= standard, `optimised after ${standard} calls with V8's defaults`);
});

test("the serve command sets the flags, other commands do not, node's own flags win", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "kv-tier-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A preload that reports every V8 flag the process sets.
  const hook = join(dir, "hook.mjs");
  writeFileSync(
    hook,
    `import { createRequire, syncBuiltinESMExports } from "node:module";
const require = createRequire(import.meta.url);
const v8 = require("node:v8");
const original = v8.setFlagsFromString;
v8.setFlagsFromString = (flag) => {
  process.stderr.write("flag " + flag + "\\n");
  original(flag);
};
syncBuiltinESMExports();`,
  );
  const serve = await run(process.execPath, ["--import", hook, CLI, "serve", "--help"]);
  assert.match(serve.stdout, /Usage: kv-engine serve/);
  assert.deepEqual(serve.stderr.trim().split("\n").sort(), [
    "flag --interrupt-budget=8192",
    "flag --minimum-invocations-after-ic-update=20",
  ]);
  // Given on node's command line: that flag is not set again.
  const given = await run(process.execPath, [
    "--import",
    hook,
    "--interrupt-budget=100000",
    CLI,
    "serve",
    "--help",
  ]);
  assert.deepEqual(given.stderr.trim().split("\n"), [
    "flag --minimum-invocations-after-ic-update=20",
  ]);
  // Other commands leave the process's flags alone.
  const other = await run(process.execPath, ["--import", hook, CLI, "get", "--help"]);
  assert.equal(other.stderr.trim(), "");
});
