/** formatStats: the per-level table and summary lines reflect the store's counters. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { formatStats, MemoryFileSystem, open } from "../../src/index.js";

test("formatStats shows files, sizes and writes per level, and the summary lines", async () => {
  const db = await open("/db", { fs: new MemoryFileSystem(), writeBufferSize: 16 * 1024 });
  for (let i = 0; i < 3000; i++) await db.put(`key${i % 900}`, "v".repeat(100), { sync: false });
  await db.flush();
  await db.compactRange();
  const s = db.stats();
  const text = formatStats(s);
  const lines = text.split("\n");
  assert.match(
    lines[0]!,
    /^Level\s+Files\s+Size\(MiB\)\s+Writes\s+Time\(s\)\s+Read\(MiB\)\s+Write\(MiB\)$/,
  );
  const row = (level: number) => lines[2 + level]!.trim().split(/\s+/);
  // Level 0: the flushes.
  assert.equal(row(0)[3], String(s.flushes));
  assert.equal(row(0)[6], (s.flushBytes / 1048576).toFixed(2));
  // The deepest level with files holds everything after compactRange.
  const last = s.levelFiles.findLastIndex((n) => n > 0);
  assert.ok(last > 0);
  assert.equal(row(last)[1], String(s.levelFiles[last]));
  assert.equal(row(last)[2], (s.levelBytes[last]! / 1048576).toFixed(2));
  const into = s.compaction.perLevel.reduce((n, l) => n + l.compactions, 0);
  assert.equal(into, s.compaction.compactions + s.compaction.trivialMoves);
  assert.match(text, new RegExp(`Sequence ${s.lastSequence};`));
  assert.match(text, /Background error: none/);
  assert.ok(text.endsWith("\n"));
  await db.close();
});
