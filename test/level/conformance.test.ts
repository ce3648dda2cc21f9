/**
 * The abstract-level conformance suite against KvEngineLevel, in npm test.
 *
 * The suite is written for tape, so conformance-runner.ts runs it in a child process; this
 * file reads its TAP and reports every tape test as a node:test subtest (named as in the
 * suite; the suite's second round, which reruns everything on a sublevel, is prefixed
 * "[sublevel]"), failing with the failed assertions' diagnostics. It also checks the run
 * as a whole: exit code 0, the TAP plan and summary agree with the assertions seen, and no
 * assertion was skipped or marked TODO. Tests the suite leaves out because of the
 * `supports` manifest are listed in docs/compatibility.md.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

interface TapTest {
  name: string;
  assertions: number;
  failures: string[];
}

interface TapRun {
  tests: TapTest[];
  assertions: number;
  passed: number;
  failed: number;
  skipped: string[];
  plan: number | undefined;
  summary: Map<string, number>;
  exitCode: number | null;
  stderr: string;
}

const RUNNER = fileURLToPath(new URL("./conformance-runner.js", import.meta.url));
/** The suite has ~740 tests per round today; far fewer means it did not really run. */
const MIN_TESTS = 1000;

function runSuite(): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUNNER], { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        code,
      });
    });
  });
}

/** Parses tape's TAP output (version 13: "# name" headers, ok/not ok lines, YAML blocks). */
function parseTap(stdout: string): Omit<TapRun, "exitCode" | "stderr"> {
  const tests: TapTest[] = [];
  const skipped: string[] = [];
  const summary = new Map<string, number>();
  let current: TapTest | undefined;
  let plan: number | undefined;
  let assertions = 0;
  let passed = 0;
  let failed = 0;
  let firstName: string | undefined;
  let round = 0;
  let yaml: string[] | undefined;
  let afterFailure = false;
  for (const line of stdout.split("\n")) {
    if (yaml !== undefined) {
      if (line === "  ...") {
        current?.failures.push(yaml.join("\n"));
        yaml = undefined;
      } else {
        yaml.push(line);
      }
      continue;
    }
    if (line === "  ---" && afterFailure) {
      yaml = [];
      afterFailure = false;
      continue;
    }
    afterFailure = false;
    const assertion = /^(not )?ok (\d+)(?: (.*))?$/.exec(line);
    if (assertion !== null) {
      assertions++;
      const description = assertion[3] ?? "";
      if (/#\s*(SKIP|TODO)\b/i.test(description)) skipped.push(description);
      if (assertion[1] === undefined) {
        passed++;
      } else {
        failed++;
        afterFailure = true;
        if (current === undefined) {
          current = { name: "(before the first test)", assertions: 0, failures: [] };
          tests.push(current);
        }
        current.failures.push(`not ok ${assertion[2]} ${description}`);
      }
      if (current !== undefined) current.assertions++;
      continue;
    }
    const planMatch = /^1\.\.(\d+)$/.exec(line);
    if (planMatch !== null) {
      plan = Number(planMatch[1]);
      current = undefined;
      continue;
    }
    const comment = /^# (.*)$/.exec(line);
    if (comment === null) continue;
    const text = comment[1]!;
    if (plan !== undefined) {
      const count = /^(tests|pass|fail|skip|todo)\s+(\d+)$/.exec(text);
      if (count !== null) summary.set(count[1]!, Number(count[2]));
      continue;
    }
    if (firstName === undefined) firstName = text;
    else if (text === firstName) round++;
    current = { name: round === 0 ? text : `[sublevel] ${text}`, assertions: 0, failures: [] };
    tests.push(current);
  }
  return { tests, assertions, passed, failed, skipped, plan, summary };
}

test("abstract-level conformance suite (abstract-level/test on tape)", async (t) => {
  const { stdout, stderr, code } = await runSuite();
  const run: TapRun = { ...parseTap(stdout), exitCode: code, stderr };

  for (const tc of run.tests) {
    await t.test(tc.name, () => {
      if (tc.failures.length > 0) assert.fail(tc.failures.join("\n"));
    });
  }

  await t.test("the run as a whole", () => {
    assert.equal(run.failed, 0, `failed assertions:\n${stdout.slice(0, 20_000)}`);
    assert.equal(run.exitCode, 0, `runner exit code (stderr: ${run.stderr})`);
    assert.deepEqual(run.skipped, [], "no assertion may be skipped or TODO");
    assert.equal(run.plan, run.assertions, "TAP plan matches the assertions seen");
    assert.equal(run.summary.get("tests"), run.assertions);
    assert.equal(run.summary.get("pass"), run.passed);
    assert.equal(run.summary.get("fail") ?? 0, 0);
    assert.ok(run.tests.length >= MIN_TESTS, `only ${run.tests.length} tests ran`);
    assert.ok(
      run.tests.some((tc) => tc.name.startsWith("[sublevel] ")),
      "the sublevel round ran",
    );
    t.diagnostic(
      `tape: ${run.tests.length} tests, ${run.assertions} assertions, ${run.passed} passed, ${run.failed} failed`,
    );
  });
});
