/**
 * The progress output of `kv-engine compact`: a bar redrawn in place on a terminal (cut to
 * its width, ended by a newline), one plain line per step otherwise.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CompactProgressPrinter, type ProgressOutput } from "../../src/cli/progress.js";
import { formatBytes, textTable } from "../../src/cli/text-table.js";
import type { CompactStep } from "../../src/tools/compact.js";

function step(n: number, percent: number, manual = true): CompactStep {
  return {
    step: n,
    percent,
    levels: { files: [0, 1], bytes: [0, 100] },
    event: {
      type: "compaction",
      level: n - 1,
      outputLevel: n,
      trivialMove: false,
      manual,
      inputFiles: 4,
      outputFiles: 2,
      bytesRead: 3 * 1024 * 1024,
      bytesWritten: 1536,
      durationMs: 5,
    },
  };
}

function sink(isTTY: boolean, columns?: number): ProgressOutput & { text: string } {
  const out = { isTTY, columns, text: "", write: (t: string) => (out.text += t) };
  return out;
}

test("on a terminal: one bar redrawn in place, cut to the width, ended by a newline", () => {
  const out = sink(true, 60);
  const p = new CompactProgressPrinter(out);
  p.start("compacting all keys");
  p.step(step(1, 50));
  assert.ok(p.open);
  p.done("done: 1 step");
  assert.ok(!p.open);
  const frames = out.text.split("\r").slice(1);
  assert.equal(frames.length, 3);
  for (const f of frames) {
    const line = f.replace("\u001b[K", "").replace("\n", "");
    assert.ok(line.length < 60, line);
  }
  assert.match(frames[0]!, /^\[\.{24}\] {3}0% compacting/);
  assert.match(frames[1]!, /^\[#{12}\.{12}\] {2}50% step 1: level 0 -> 1: 4 fil/);
  assert.equal(frames[2], `[${"#".repeat(24)}] 100% done: 1 step\u001b[K\n`);
});

test("elsewhere: one plain line per step", () => {
  const out = sink(false);
  const p = new CompactProgressPrinter(out);
  p.start("compacting all keys");
  p.step(step(1, 12.4, false));
  p.done("done: 1 step");
  assert.equal(
    out.text,
    "compact: compacting all keys\n" +
      "compact:  12% step 1: level 0 -> 1 (background): 4 files in, 2 out, read 3.00 MiB, wrote 1.50 KiB\n" +
      "compact: 100% done: 1 step\n",
  );
});

test("tables and sizes", () => {
  assert.deepEqual(
    textTable(
      ["Level", "Files"],
      [
        ["0", "12"],
        ["1", "3"],
      ],
    ),
    ["Level  Files", "-----  -----", "0         12", "1          3"],
  );
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(1536), "1.50 KiB");
  assert.equal(formatBytes(5 * 1024 ** 3), "5.00 GiB");
});
