/**
 * `verify` and `repair` (src/tools/) on stores with data in several levels (tiny write
 * buffer and compaction settings, overwrites and deletes across tables) and in the log:
 * verify passes a healthy store and names the damaged file for each kind of damage;
 * repair makes every damaged store open again, keeps every key the damage did not touch
 * with its right value, reports what it dropped, and is itself crash safe (a power loss
 * at any of its file operations leaves a store that opens, or that repair fixes when run
 * again). The CLI subcommands run against a real directory.
 *
 * Seeded: a failure prints the seed, KV_SEED=<seed> replays it.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  MemoryFileSystem,
  open,
  RealFileSystem,
} from "../../src/index.js";
import { repairStore } from "../../src/tools/repair.js";
import { verifyStore } from "../../src/tools/verify.js";
import { latin1 } from "../support/bytes.js";
import { keyName } from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { runCli } from "../support/server-process.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";
import { tempDir } from "../support/temp-dir.js";

const DIR = "/db";
const KEYS = 120;
const OPTIONS = SMALL_LEVELS;

type Model = Map<string, string>;
const keyOf = keyName;
const text = latin1;

interface Built {
  mem: MemoryFileSystem;
  model: Model;
  /** Every value each key ever had (undefined: deleted), oldest first. */
  history: Map<string, Array<string | undefined>>;
}

/** A store whose data lies in several levels and in the log, closed. */
async function build(seed: number, fs?: MemoryFileSystem): Promise<Built> {
  const mem = fs ?? new MemoryFileSystem();
  const r = rng(seed);
  const model: Model = new Map();
  const history = new Map<string, Array<string | undefined>>();
  const db = await open(DIR, { ...OPTIONS, fs: mem });
  for (let i = 0; i < 900; i++) {
    const k = keyOf(randInt(r, KEYS));
    const h = history.get(k) ?? [];
    history.set(k, h);
    if (r() < 0.15) {
      model.delete(k);
      h.push(undefined);
      await db.delete(k);
    } else {
      const v = `${i}-${"v".repeat(randInt(r, 60))}`;
      model.set(k, v);
      h.push(v);
      await db.put(k, v);
    }
  }
  // A few records in a fresh log after a flush: the log holds several records whatever
  // the seed (the corruption cases damage its first one and expect records after it).
  await db.flush();
  for (let i = 0; i < 5; i++) {
    const k = keyOf(i);
    const v = `tail-${i}`;
    model.set(k, v);
    const h = history.get(k) ?? [];
    history.set(k, h);
    h.push(v);
    await db.put(k, v);
  }
  const s = db.stats();
  assert.ok(
    s.levelFiles.slice(1).some((n) => n > 0),
    `seed ${seed}: nothing below level 0`,
  );
  assert.ok(s.memtableEntries > 0, `seed ${seed}: nothing in the log`);
  await db.close();
  return { mem, model, history };
}

async function copyOf(src: MemoryFileSystem): Promise<MemoryFileSystem> {
  const out = new MemoryFileSystem();
  await out.mkdir(DIR);
  await out.syncDir("/");
  for (const [path, bytes] of src.snapshotFiles()) out.writeFile(`/${path}`, bytes);
  return out;
}

async function names(fs: MemoryFileSystem): Promise<string[]> {
  return fs.list(DIR);
}

/** Reads every key: the state of the store. */
async function state(fs: MemoryFileSystem): Promise<Model> {
  const db = await open(DIR, { ...OPTIONS, fs });
  try {
    const out: Model = new Map();
    for (let i = 0; i < KEYS; i++) {
      const v = text(await db.get(keyOf(i)));
      if (v !== undefined) out.set(keyOf(i), v);
    }
    // Iteration agrees with get.
    const scanned = (await db.iterator().all()).map(([k, v]) => `${text(k)}=${text(v)}`);
    assert.deepEqual(
      scanned,
      [...out].map(([k, v]) => `${k}=${v}`),
      "iteration disagrees with get",
    );
    return out;
  } finally {
    await db.close();
  }
}

function assertSame(actual: Model, expected: Model, what: string): void {
  const diff: string[] = [];
  for (const [k, v] of expected)
    if (actual.get(k) !== v) diff.push(`${k}: ${actual.get(k)} != ${v}`);
  for (const [k, v] of actual) if (!expected.has(k)) diff.push(`${k}: unexpected ${v}`);
  assert.equal(diff.length, 0, `${what}:\n  ${diff.slice(0, 8).join("\n  ")}`);
}

function flip(fs: MemoryFileSystem, path: string, offset: number, bit = 3): void {
  const bytes = fs.readFile(path);
  bytes[offset]! ^= 1 << bit;
  fs.writeFile(path, bytes);
}

describe("verify", () => {
  test("a healthy store with data in several levels and the log passes", async () => {
    const seed = testSeed();
    const { mem } = await build(seed);
    const report = await verifyStore(DIR, { fs: mem });
    assert.deepEqual(report.problems, [], `seed ${seed}`);
    assert.equal(report.ok, true);
    assert.ok(report.tablesChecked >= 3 && report.logsChecked >= 1 && report.logRecords > 0);
    // verify changes nothing.
    const before = [...(await copyOf(mem)).snapshotFiles()];
    await verifyStore(DIR, { fs: mem });
    assert.deepEqual([...mem.snapshotFiles()], before);
  });

  test("names the damaged file for each kind of damage", async () => {
    const seed = testSeed();
    const { mem } = await build(seed);
    const all = await names(mem);
    const table = `${DIR}/${all.find((n) => n.endsWith(".sst"))!}`;
    const log = `${DIR}/${all.find((n) => n.endsWith(".log"))!}`;
    const manifest = `${DIR}/${all.find((n) => n.startsWith("MANIFEST-"))!}`;
    const cases: Array<[string, string, (fs: MemoryFileSystem) => Promise<void> | void]> = [
      ["table data block", table, (fs) => flip(fs, table, 10)],
      ["table footer", table, (fs) => flip(fs, table, fs.readFile(table).length - 3)],
      ["missing table", table, (fs) => fs.remove(table)],
      ["log record followed by records", log, (fs) => flip(fs, log, 20)],
      ["manifest", manifest, (fs) => flip(fs, manifest, 12)],
      [
        "CURRENT",
        `${DIR}/CURRENT`,
        (fs) => fs.writeFile(`${DIR}/CURRENT`, Buffer.from("MANIFEST-x\n")),
      ],
    ];
    for (const [what, file, damage] of cases) {
      const fs = await copyOf(mem);
      await damage(fs);
      const report = await verifyStore(DIR, { fs });
      assert.equal(report.ok, false, `seed ${seed}, ${what}: not found`);
      assert.ok(
        report.problems.some((p) => p.includes(file)),
        `seed ${seed}, ${what}: no problem names ${file}: ${report.problems.join("; ")}`,
      );
    }
  });

  test("a torn log tail is a note, not a problem; a store open elsewhere is LOCKED", async () => {
    const { mem } = await build(testSeed());
    const log = `${DIR}/${(await names(mem)).find((n) => n.endsWith(".log"))!}`;
    const bytes = mem.readFile(log);
    // Cut the last record short (the file ends in preallocated zeros after the records).
    let end = bytes.length;
    while (end > 0 && bytes[end - 1] === 0) end--;
    mem.writeFile(log, bytes.slice(0, end - 5));
    const report = await verifyStore(DIR, { fs: mem });
    assert.deepEqual(report.problems, []);
    assert.ok(report.notes.some((n) => n.includes("torn tail") && n.includes(log)));
    const db = await open(DIR, { ...OPTIONS, fs: mem });
    await assert.rejects(verifyStore(DIR, { fs: mem }), (e) => isKvError(e, "LOCKED"));
    await assert.rejects(repairStore(DIR, { fs: mem }), (e) => isKvError(e, "LOCKED"));
    await db.close();
  });
});

describe("repair", () => {
  test("of a healthy store changes no data and drops nothing", async () => {
    const seed = testSeed();
    const { mem, model } = await build(seed);
    const report = await repairStore(DIR, { fs: mem });
    assert.equal(report.mode, "manifest");
    assert.deepEqual(report.dropped, []);
    assertSame(await state(mem), model, `seed ${seed}`);
    assert.equal((await verifyStore(DIR, { fs: mem })).ok, true);
  });

  test("without CURRENT and manifest, rebuilds from every table and the log: nothing lost, no stale value", async () => {
    const base = testSeed();
    for (let s = 0; s < 3; s++) {
      const seed = base + s;
      const { mem, model } = await build(seed);
      for (const n of await names(mem)) {
        if (n === "CURRENT" || n.startsWith("MANIFEST-")) await mem.remove(`${DIR}/${n}`);
      }
      await assert.rejects(open(DIR, { ...OPTIONS, fs: mem }), (e) => isKvError(e, "CORRUPTION"));
      const report = await repairStore(DIR, { fs: mem, targetFileSize: 4096 });
      assert.equal(report.mode, "rebuilt");
      assert.deepEqual(report.dropped, []);
      assert.ok(report.tablesMerged >= 3 && report.tablesKept >= 1);
      assertSame(await state(mem), model, `seed ${seed} (KV_SEED=${seed})`);
      assert.deepEqual((await verifyStore(DIR, { fs: mem })).problems, []);
    }
  });

  test("with a garbled CURRENT, keeps the levels of the newest manifest that replays", async () => {
    const seed = testSeed();
    const { mem, model } = await build(seed);
    mem.writeFile(`${DIR}/CURRENT`, Buffer.from("garbage"));
    const report = await repairStore(DIR, { fs: mem });
    assert.equal(report.mode, "manifest");
    assert.match(report.manifestProblem ?? "", /CURRENT/);
    assert.deepEqual(report.dropped, []);
    assertSame(await state(mem), model, `seed ${seed}`);
  });

  test("salvages (or drops) a damaged table, reports it, and keeps every key the table did not hold", async () => {
    const seed = testSeed();
    const r = rng(seed);
    const { mem, model, history } = await build(seed);
    const tables = (await names(mem)).filter((n) => n.endsWith(".sst"));
    const victim = `${DIR}/${tables[randInt(r, tables.length)]!}`;
    // Which keys the victim holds (read before damaging it).
    const held = new Set<string>();
    {
      const { TableReader } = await import("../../src/sstable/table-reader.js");
      const reader = TableReader.open(await mem.openReadable(victim), 1);
      const it = reader.iterator();
      for (it.seekToFirst(); it.valid(); it.next()) held.add(Buffer.from(it.key).toString());
      it.close();
      await reader.close();
    }
    flip(mem, victim, randInt(r, 40));
    const damaged = mem.readFile(victim);
    const report = await repairStore(DIR, { fs: mem });
    const hit = [...report.droppedTables, ...report.salvagedTables].map((t) => t.file);
    assert.deepEqual(hit, [victim], JSON.stringify(report.dropped));
    assert.ok(report.dropped[0]!.includes(victim));
    // The damaged original is kept in lost/, and the next open leaves it there.
    const kept = report.archived.find((a) => a.file === victim);
    assert.ok(kept !== undefined, JSON.stringify(report));
    assert.ok(kept.to.startsWith(`${DIR}/lost/`), kept.to);
    assert.deepEqual(mem.readFile(kept.to), damaged);
    const after = await state(mem);
    assert.deepEqual(mem.readFile(kept.to), damaged, "the next open deleted the original");
    for (let i = 0; i < KEYS; i++) {
      const k = keyOf(i);
      if (held.has(k)) {
        // Lost or an older value of the key: never a value it never had.
        const v = after.get(k);
        assert.ok(v === undefined || (history.get(k) ?? []).includes(v), `seed ${seed}: ${k}=${v}`);
      } else {
        assert.equal(after.get(k), model.get(k), `seed ${seed}: ${k} (not in ${victim})`);
      }
    }
  });

  test("cuts a damaged record out of a log: the store opens with the records around it", async () => {
    const mem = new MemoryFileSystem();
    const db = await open(DIR, { fs: mem });
    for (let i = 0; i < 50; i++) await db.put(keyOf(i), `value-${i}-${"x".repeat(40)}`);
    await db.close();
    const log = `${DIR}/${(await names(mem)).find((n) => n.endsWith(".log"))!}`;
    flip(mem, log, 25 * 70);
    await assert.rejects(open(DIR, { fs: mem }), (e) => isKvError(e, "CORRUPTION"));
    const before = await verifyStore(DIR, { fs: mem });
    assert.ok(before.problems.some((p) => p.includes(log)));
    const report = await repairStore(DIR, { fs: mem });
    assert.equal(report.logsRewritten.length, 1);
    assert.equal(report.logsRewritten[0]!.file, log);
    assert.ok(report.dropped.some((d) => d.includes(log)));
    const again = await open(DIR, { fs: mem });
    let present = 0;
    for (let i = 0; i < 50; i++) {
      const v = text(await again.get(keyOf(i)));
      if (v !== undefined) {
        assert.equal(v, `value-${i}-${"x".repeat(40)}`);
        present++;
      }
    }
    assert.ok(present >= 48, `${present} of 50 records kept`);
    assert.equal(text(await again.get(keyOf(49))), `value-49-${"x".repeat(40)}`);
    await again.close();
    assert.deepEqual((await verifyStore(DIR, { fs: mem })).problems, []);
  });

  test("is crash safe: a power loss at any file operation of repair leaves a store that repair (again) makes whole", async () => {
    const seed = testSeed();
    const { mem: built, model } = await build(seed);
    for (const n of await names(built)) {
      if (n === "CURRENT" || n.startsWith("MANIFEST-")) await built.remove(`${DIR}/${n}`);
    }
    // Count the operations of a repair, then crash before each of them.
    const dry = new FaultInjectingFileSystem(await copyOf(built));
    await repairStore(DIR, { fs: dry });
    const total = dry.opCount;
    let crashes = 0;
    for (let n = 0; n < total; n++) {
      const mem = await copyOf(built);
      let clone: MemoryFileSystem | undefined;
      const fs = new FaultInjectingFileSystem(mem, {
        onOp: (_op, index) => {
          if (index === n) clone = mem.crashClone({ unsyncedRetention: 0.5, seed: seed + n });
        },
      });
      await repairStore(DIR, { fs });
      assert.ok(clone !== undefined);
      crashes++;
      await repairStore(DIR, { fs: clone });
      assertSame(await state(clone), model, `seed ${seed}: crash before op ${n} of ${total}`);
    }
    assert.ok(crashes > 20, `${crashes} crash points`);
  });
});

describe("kv-engine verify / repair", () => {
  test("check, find damage (exit 1), repair (exit 0), check again on a real directory", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const data = join(dir.path, "data");
    // Inline compactions: one cut short by close removes its outputs at once (a worker's
    // are removed at the next open), so every table file left is a live one.
    const db = await open(data, {
      ...OPTIONS,
      fs: new RealFileSystem(),
      compactionMode: "inline",
    });
    for (let i = 0; i < 400; i++) await db.put(keyOf(i % KEYS), `v${i}-${"y".repeat(30)}`);
    await db.close();
    // Open deletes the tables compactions made obsolete (close may leave them): after this,
    // every table file is one the manifest lists.
    await (await open(data, { ...OPTIONS, compactionMode: "inline" })).close();
    const ok = await runCli(["verify", "--data-dir", data]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /^OK: /);
    const json = await runCli(["verify", "--data-dir", data, "--json"]);
    assert.equal((JSON.parse(json.stdout) as { ok: boolean }).ok, true);

    const table = readdirSync(data).find((n) => n.endsWith(".sst"))!;
    const bytes = readFileSync(join(data, table));
    bytes[7]! ^= 0x10;
    writeFileSync(join(data, table), bytes);
    const bad = await runCli(["verify", "--data-dir", data]);
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /^DAMAGED: /);
    assert.ok(bad.stdout.includes(table), bad.stdout);

    const fixed = await runCli(["repair", "--data-dir", data]);
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.match(fixed.stdout, new RegExp(`dropped: .*${table}`));
    const again = await runCli(["verify", "--data-dir", data]);
    assert.equal(again.code, 0, again.stdout);
    const reopened = await open(data);
    await reopened.close();

    for (const args of [
      ["verify"],
      ["repair", "--data-dir", data, "extra"],
      ["verify", "--bogus"],
    ]) {
      const r = await runCli(args);
      assert.equal(r.code, 2, args.join(" "));
      assert.match(r.stderr, /Usage: kv-engine/);
    }
    for (const c of ["verify", "repair"]) {
      const h = await runCli([c, "--help"]);
      assert.equal(h.code, 0);
      assert.match(h.stdout, new RegExp(`^Usage: kv-engine ${c}`));
    }
    const missing = await runCli(["verify", "--data-dir", join(dir.path, "nope")]);
    assert.equal(missing.code, 1);
  });
});
