/**
 * The CLI as the left side of a pipe whose reader stops early (`kv-engine scan | head -2`,
 * `kv-engine sst dump FILE --entries | head`): the process exits 0 without a word on
 * stderr once a write finds the pipe closed, instead of dying with an EPIPE stack trace.
 * Real processes: the test reads the child's stdout until it has two lines, then closes
 * its end of the pipe, as `head -2` does.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { open } from "../../src/index.js";
import { CLI, type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const tmp = tempDir("kv-cli-pipes-");
const dataDir = join(tmp.path, "data");
/** Rows enough that the output is many times a pipe's buffer (64 KiB). */
const ROWS = 20_000;

before(async () => {
  const db = await open(dataDir, { sync: false });
  for (let i = 0; i < ROWS; i += 1000) {
    const batch = db.batch();
    for (let j = i; j < i + 1000; j++)
      batch.put(`key${String(j).padStart(6, "0")}`, "v".repeat(64));
    await db.write(batch);
  }
  await db.flush();
  await db.close();
});

after(() => tmp.remove());

interface HeadResult {
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the CLI with `args`, reads two lines of its stdout, then closes the pipe. */
function headTwo(args: string[]): Promise<HeadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let lines: string[] | undefined;
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8");
    });
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const all = out.split("\n");
      if (lines === undefined && all.length > 2) {
        lines = all.slice(0, 2);
        child.stdout.destroy(); // what head does after its lines: close the read end
      }
    });
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (lines === undefined) reject(new Error(`exited (${code}) before two lines: ${err}`));
      else resolve({ lines, code, signal, stderr: err });
    });
  });
}

test("sst dump --entries into a pipe closed after two lines exits 0 quietly", async () => {
  const table = readdirSync(dataDir).find((f) => f.endsWith(".sst"));
  assert.ok(table !== undefined, "the flush wrote a table");
  const r = await headTwo(["sst", "dump", join(dataDir, table), "--entries"]);
  assert.match(r.lines[0]!, /^file: /);
  assert.deepEqual([r.code, r.signal, r.stderr], [0, null, ""]);
});

test("scan into a pipe closed after two lines exits 0 quietly", async (t) => {
  let server: ServerProcess | undefined = await startServer(dataDir, ["--no-sync"]);
  t.after(async () => {
    assert.equal(await server?.stop(), 0);
    server = undefined;
  });
  const r = await headTwo(["scan", "--addr", server.address]);
  assert.deepEqual(r.lines, [`key000000\t${"v".repeat(64)}`, `key000001\t${"v".repeat(64)}`]);
  assert.deepEqual([r.code, r.signal, r.stderr], [0, null, ""]);
});
