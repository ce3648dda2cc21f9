/**
 * Corruption matrix: one store with data in several levels, in several tables per level
 * and in its write-ahead log (tiny write buffer, blocks and compaction settings; puts,
 * overwrites and deletes from a seeded history of batches) is closed; then, for every file
 * of the directory (each table, the log, the manifest, CURRENT), copies of the store get
 * one damage each: a flipped bit at, or a cut to, an offset (seeded, spread over each
 * table's regions - data blocks, filter, properties, index, footer - and over the whole
 * of the other files, plus the first and last bytes).
 *
 * Each case must end in one of:
 * - open refuses with KvError CORRUPTION naming the damaged file; or
 * - the store opens and every get and a full forward and reverse scan return exactly the
 *   data (or fail with CORRUPTION naming the file); and a compactRange then either fails
 *   with CORRUPTION naming the file or leaves every read right (compaction never spreads
 *   damage silently).
 * "The data" is the whole history, except for damage in the log: a flipped bit in its last
 * record or a cut is what a torn append looks like, and recovery keeps a prefix of history;
 * the cases check that what is lost are only records at or after the damage.
 * No case may return a wrong value, throw anything but a KvError, or crash the process.
 * And `verify` reports every case as a problem naming the file (a cut log: a torn-tail note).
 *
 * Manifest cuts are reported separately (see docs/reliability.md): a manifest cut inside a
 * record looks exactly like an interrupted append of that record, which recovery drops by
 * design, so a cut that removes acknowledged edits opens a store that lacks them.
 *
 * Default: ~10 offsets x 2 damages per file. KV_STRESS=1 (or KV_CORRUPTION_CASES=<n> per
 * file) many more. Failures print the seed; KV_SEED=<seed> replays.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError, type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { decodeFooter, FOOTER_SIZE } from "../../src/sstable/format.js";
import { verifyStore } from "../../src/tools/verify.js";
import { readLog } from "../../src/wal/log-reader.js";
import { latin1 } from "../support/bytes.js";
import { applyBatch, type Batch, batchGenerator, keyName } from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const PER_FILE = Number(process.env["KV_CORRUPTION_CASES"] ?? (STRESS ? 60 : 8));
const DIR = "/db";
const KEYS = 60;
const OPTIONS = SMALL_LEVELS;

type Model = Map<string, string>;
const text = latin1;

interface Built {
  mem: MemoryFileSystem;
  history: Batch[];
  /** Per log file: start offset of each record and the history index of its batch. */
  logRecords: Map<string, number[]>;
}

async function build(seed: number): Promise<Built> {
  const mem = new MemoryFileSystem();
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 3 });
  const history: Batch[] = [];
  const db = await open(DIR, { ...OPTIONS, fs: mem });
  for (let i = 0; i < 500; i++) {
    const b = next();
    history.push(b);
    const wb = db.batch();
    for (const op of b.ops) op.value === undefined ? wb.delete(op.key) : wb.put(op.key, op.value);
    await db.write(wb);
  }
  const s = db.stats();
  assert.ok(s.levelFiles.slice(1).some((n) => n > 0) && s.memtableEntries > 0, `seed ${seed}`);
  await db.close();
  const logRecords = new Map<string, number[]>();
  for (const name of await mem.list(DIR)) {
    if (!name.endsWith(".log")) continue;
    const path = `${DIR}/${name}`;
    const starts: number[] = [];
    const file = await mem.openReadable(path);
    await readLog(file, "absoluteConsistency", (_p, start) => starts.push(start));
    await file.close();
    logRecords.set(path, starts);
  }
  return { mem, history, logRecords };
}

async function copyOf(src: MemoryFileSystem): Promise<MemoryFileSystem> {
  const out = new MemoryFileSystem();
  await out.mkdir(DIR);
  for (const [path, bytes] of src.snapshotFiles()) out.writeFile(`/${path}`, bytes);
  return out;
}

/** Offsets to damage in `path`: first, last, and seeded ones spread over its regions. */
function offsetsFor(path: string, bytes: Uint8Array, r: () => number, n: number): number[] {
  const size = bytes.length;
  const out = new Set<number>([0, size - 1]);
  const regions: Array<[number, number]> = [];
  if (path.endsWith(".sst")) {
    const f = decodeFooter(bytes.subarray(size - FOOTER_SIZE), size, path);
    const dataEnd = Math.min(
      f.index.offset,
      f.properties.offset,
      f.filter.size > 0 ? f.filter.offset : size,
    );
    regions.push([0, dataEnd], [size - FOOTER_SIZE, size]);
    for (const h of [f.index, f.properties, f.filter])
      if (h.size > 0) regions.push([h.offset, h.offset + h.size + 5]);
  } else {
    regions.push([0, size]);
  }
  for (let i = 0; out.size < Math.min(size, n + 2) && i < n * 4; i++) {
    const [a, b] = regions[i % regions.length]!;
    out.add(a + randInt(r, b - a));
  }
  return [...out].sort((x, y) => x - y);
}

function assertNamesFile(err: unknown, file: string, what: string): void {
  if (!isKvError(err, "CORRUPTION"))
    assert.fail(`${what}: expected CORRUPTION naming ${file}, got ${String(err)}`);
  // A damaged CURRENT that names a manifest that does not exist is reported as
  // "CURRENT names MANIFEST-N, which does not exist" (file: the manifest).
  const named =
    err.file === file ||
    err.message.includes(file) ||
    (file.endsWith("/CURRENT") && err.message.includes("CURRENT names"));
  assert.ok(named, `${what}: CORRUPTION does not name ${file}: ${err.message}`);
}

/** Every key by get, and both scans; reads failing with CORRUPTION naming `file` are counted. */
async function readAll(
  db: KvStore,
  file: string,
  what: string,
): Promise<{ state: Model; failed: number }> {
  const state: Model = new Map();
  let failed = 0;
  for (let i = 0; i < KEYS; i++) {
    try {
      const v = await db.get(keyName(i));
      if (v !== undefined) state.set(keyName(i), text(v));
    } catch (err) {
      assertNamesFile(err, file, `${what}: get ${keyName(i)}`);
      failed++;
      state.set(keyName(i), "<unreadable>");
    }
  }
  for (const reverse of [false, true]) {
    try {
      const rows = await db.iterator({ reverse }).all();
      const scanned = rows.map(([k, v]) => `${text(k)}=${text(v)}`);
      const byGet = [...state]
        .filter(([, v]) => v !== "<unreadable>")
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`);
      if (reverse) byGet.reverse();
      if (failed === 0)
        assert.deepEqual(
          scanned,
          byGet,
          `${what}: ${reverse ? "reverse " : ""}scan disagrees with get`,
        );
    } catch (err) {
      if (err instanceof assert.AssertionError) throw err;
      assertNamesFile(err, file, `${what}: scan`);
      failed++;
    }
  }
  return { state, failed };
}

/**
 * Largest m with the model after history[0..m) equal to `actual` (ignoring unreadable
 * keys), or -1. (Largest: a batch that changes nothing must not count as lost.)
 */
function prefixOf(history: readonly Batch[], actual: Model): number {
  const model: Model = new Map();
  const same = () => {
    for (const [k, v] of actual) if (v !== "<unreadable>" && model.get(k) !== v) return false;
    for (const [k] of model) if (!actual.has(k)) return false;
    return true;
  };
  let found = -1;
  for (let m = 0; m <= history.length; m++) {
    if (same()) found = m;
    if (m < history.length) applyBatch(model, history[m]!);
  }
  return found;
}

interface Tally {
  cases: number;
  refused: number;
  openedIntact: number;
  readsFailed: number;
  tornPrefix: number;
  compactions: number;
}

describe("corruption matrix", () => {
  test("every bit flip and cut in every file: refused with CORRUPTION naming it, or served exactly; verify names it", async (t) => {
    const seed = testSeed();
    const r = rng(seed);
    const built = await build(seed);
    const full: Model = new Map();
    for (const b of built.history) applyBatch(full, b);
    const tallies: Record<string, Tally> = {};
    const undetected: string[] = [];
    const files = (await built.mem.list(DIR)).filter((n) => n !== "LOCK").map((n) => `${DIR}/${n}`);
    let caseNo = 0;
    for (const path of files) {
      const kind = path.endsWith(".sst")
        ? "table"
        : path.endsWith(".log")
          ? "log"
          : path.endsWith("CURRENT")
            ? "CURRENT"
            : "manifest";
      const bytes = built.mem.readFile(path);
      for (const offset of offsetsFor(path, bytes, r, PER_FILE)) {
        for (const damage of ["flip", "cut"] as const) {
          if (damage === "cut" && kind === "manifest") continue; // reported separately
          const what = `seed ${seed} (KV_SEED=${seed}): ${damage} ${path} at ${offset}`;
          const fs = await copyOf(built.mem);
          const copy = bytes.slice();
          if (damage === "flip") copy[offset]! ^= 1 << randInt(r, 8);
          fs.writeFile(path, damage === "flip" ? copy : copy.subarray(0, offset));
          const name = `${kind} ${damage}`;
          const tally: Tally = tallies[name] ?? {
            cases: 0,
            refused: 0,
            openedIntact: 0,
            readsFailed: 0,
            tornPrefix: 0,
            compactions: 0,
          };
          tallies[name] = tally;
          tally.cases++;
          caseNo++;
          // verify first (it must not change anything the open below sees).
          const report = await verifyStore(DIR, { fs });
          const named = report.problems.some((p) => p.includes(path));
          const tornNote = report.notes.some((n) => n.includes(path) && n.includes("torn"));
          // A cut log is a shorter log: cut inside a record it shows as a torn tail (a note),
          // cut at a record boundary (or at 0) it shows nothing at all, by design.
          const logCut = kind === "log" && damage === "cut";
          if (!named && !(kind === "log" && tornNote) && !logCut)
            undetected.push(`${what}: ${report.problems.join("; ") || "no problem"}`);

          let db: KvStore;
          try {
            db = await open(DIR, { ...OPTIONS, fs });
          } catch (err) {
            assertNamesFile(err, path, `${what}: open`);
            tally.refused++;
            continue;
          }
          try {
            const { state, failed } = await readAll(db, path, what);
            if (failed > 0) tally.readsFailed++;
            const m = prefixOf(built.history, state);
            if (m === built.history.length && failed === 0) tally.openedIntact++;
            else if (failed === 0) {
              assert.ok(m >= 0, `${what}: the store serves a state that is no prefix of history`);
              assert.equal(
                kind,
                "log",
                `${what}: opened missing ${built.history.length - m} batches`,
              );
              // Only records at or after the damage are lost.
              const starts = built.logRecords.get(path)!;
              const atOrAfter = starts.filter((s) => s >= offset).length + 1;
              assert.ok(
                built.history.length - m <= atOrAfter,
                `${what}: lost ${built.history.length - m} batches, only ${atOrAfter} records at or after the damage`,
              );
              tally.tornPrefix++;
            } else {
              assert.ok(m >= 0, `${what}: readable keys are no prefix of history`);
            }
            // Compaction never spreads damage silently.
            if (caseNo % 3 === 0) {
              try {
                await db.compactRange();
                tally.compactions++;
                const again = await readAll(db, path, `${what}, after compactRange`);
                for (const [k, v] of again.state) {
                  if (v !== "<unreadable>")
                    assert.equal(v, state.get(k), `${what}: compactRange changed ${k}`);
                }
              } catch (err) {
                if (err instanceof assert.AssertionError) throw err;
                assertNamesFile(err, path, `${what}: compactRange`);
              }
            }
          } finally {
            await db.close().catch(() => {});
          }
        }
      }
    }
    t.diagnostic(`seed ${seed}: ${caseNo} cases ${JSON.stringify(tallies)}`);
    assert.deepEqual(undetected, [], "verify missed damage");
  });

  test("a manifest cut: refused, or opened as an interrupted append (a prefix of its edits); counted", async (t) => {
    const seed = testSeed();
    const built = await build(seed);
    const manifest = (await built.mem.list(DIR)).find((n) => n.startsWith("MANIFEST-"))!;
    const path = `${DIR}/${manifest}`;
    const bytes = built.mem.readFile(path);
    let refused = 0;
    let intact = 0;
    let lossy = 0;
    for (
      let cut = 0;
      cut < bytes.length;
      cut += Math.max(1, Math.floor(bytes.length / (STRESS ? 200 : 20)))
    ) {
      const fs = await copyOf(built.mem);
      fs.writeFile(path, bytes.subarray(0, cut));
      let db: KvStore;
      try {
        db = await open(DIR, { ...OPTIONS, fs });
      } catch (err) {
        // CORRUPTION naming the manifest, or (an older version naming a table since
        // compacted away and deleted) an error naming that table.
        assert.ok(
          isKvError(err) && err.file !== undefined,
          `seed ${seed}: cut to ${cut}: ${String(err)}`,
        );
        refused++;
        continue;
      }
      const { state } = await readAll(db, path, `manifest cut to ${cut}`);
      await db.close();
      const full: Model = new Map();
      for (const b of built.history) applyBatch(full, b);
      let same = state.size === full.size;
      for (const [k, v] of full) if (state.get(k) !== v) same = false;
      if (same) intact++;
      else lossy++;
    }
    t.diagnostic(
      `seed ${seed}: manifest of ${bytes.length} bytes: ${refused} cuts refused, ${intact} opened intact, ${lossy} opened missing data`,
    );
    assert.ok(refused > 0);
  });

  test("a table the manifest lists but the directory lacks: open refuses with CORRUPTION naming it", async () => {
    const built = await build(testSeed());
    const table = (await built.mem.list(DIR)).find((n) => n.endsWith(".sst"))!;
    const fs = await copyOf(built.mem);
    await fs.remove(`${DIR}/${table}`);
    await assert.rejects(open(DIR, { ...OPTIONS, fs }), (err) => {
      assertNamesFile(err, `${DIR}/${table}`, "missing table");
      return true;
    });
  });
});
