/**
 * The inspection and maintenance commands as a user runs them, on stores in a temp dir:
 * sst dump, wal dump and manifest dump (text and JSON agree with each other and with the
 * store; a flipped byte in a log is reported at the damaged record's offset), stats (the
 * per-level table), compact (one level left, the data intact, progress on stderr),
 * backup (the copy opens with the same data and shares inodes), LOCKED while another
 * process holds the store, --help for each command, exit 2 for bad usage.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type KvStore, type OpenOptions, open } from "../../src/index.js";
import { keyName } from "../support/history.js";
import { runCli } from "../support/server-process.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";
import { tempDir } from "../support/temp-dir.js";

const OPTIONS: OpenOptions = { ...SMALL_LEVELS, sync: false };
const keyOf = keyName;
const BINARY_KEY = Buffer.from([0xff, 0x00, 0x0a]);

const tmp = tempDir("kv-inspect-");
const data = join(tmp.path, "data");
const model = new Map<string, string>();

type Result = Awaited<ReturnType<typeof runCli>>;

async function ok(args: string[]): Promise<Result> {
  const r = await runCli(args);
  assert.equal(r.code, 0, `kv-engine ${args.join(" ")}: ${r.stderr}`);
  return r;
}

async function json<T>(args: string[]): Promise<T> {
  return JSON.parse((await ok(args)).stdout) as T;
}

async function contents(db: KvStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const [k, v] of db.iterator()) {
    out.set(Buffer.from(k).toString("latin1"), Buffer.from(v).toString("latin1"));
  }
  return out;
}

interface ManifestJson {
  edits: unknown[];
  final: { levels: Array<Array<{ number: number; size: number; entries: number }>> };
}

before(async () => {
  const db = await open(data, OPTIONS);
  for (let i = 0; i < 600; i++) {
    const k = keyOf((i * 37) % 120);
    if (i % 11 === 0) {
      await db.delete(k);
      model.delete(k);
    } else {
      const v = `${i}-${"v".repeat(i % 25)}`;
      await db.put(k, v);
      model.set(k, v);
    }
  }
  await db.put(BINARY_KEY, "tab\there"); // stays in the log
  model.set(BINARY_KEY.toString("latin1"), "tab\there");
  await db.close();
});

after(() => tmp.remove());

describe("dumps", () => {
  test("sst dump and manifest dump agree with each other and with the store", async () => {
    const manifest = await json<ManifestJson>(["manifest", "dump", data, "--json"]);
    const files = manifest.final.levels.flat();
    assert.ok(files.length > 2);
    assert.ok(
      manifest.final.levels.slice(1).some((l) => l.length > 0),
      "tables below level 0",
    );
    const name = (n: number) => join(data, `${String(n).padStart(6, "0")}.sst`);
    const dumps = await Promise.all(
      files.map((f) =>
        json<{
          fileSize: number;
          properties: { entries: number; dataBlocks: number; smallestKey: string };
          blocks: Array<{ entries: number; lastKey: { key: string } }>;
          entries: Array<{ key: string; seq: number; kind: string; value?: string }>;
        }>(["sst", "dump", "--json", "--entries", name(f.number)]),
      ),
    );
    const seen = new Set<string>();
    dumps.forEach((d, i) => {
      assert.equal(d.fileSize, files[i]!.size);
      assert.equal(d.properties.entries, files[i]!.entries);
      assert.equal(d.entries.length, files[i]!.entries);
      assert.equal(d.blocks.length, d.properties.dataBlocks);
      assert.equal(d.entries[0]!.key, d.properties.smallestKey);
      for (const e of d.entries) {
        assert.match(e.key, /^key\d{4}$/);
        assert.ok(e.kind === "PUT" || e.kind === "DEL");
        seen.add(e.key);
      }
    });
    // Every key written is in a table or, written after the last flush, in a log.
    const logs = readdirSync(data).filter((n) => n.endsWith(".log"));
    const walDumps = await Promise.all(
      logs.map((n) =>
        json<{ records: Array<{ ops: Array<{ key?: string }> }> }>([
          "wal",
          "dump",
          "--json",
          join(data, n),
        ]),
      ),
    );
    for (const d of walDumps) {
      for (const r of d.records) for (const op of r.ops) if (op.key !== undefined) seen.add(op.key);
    }
    for (const k of model.keys()) if (k.startsWith("key")) assert.ok(seen.has(k), k);

    // After the table dumps: opening the store (stats) may compact and delete tables.
    const [text, stats] = await Promise.all([
      ok(["manifest", "dump", data]),
      json<{ levelFiles: number[] }>(["stats", "--data-dir", data, "--json"]),
    ]);
    assert.deepEqual(
      manifest.final.levels.map((l) => l.length),
      stats.levelFiles,
    );
    assert.match(text.stdout, /^manifest: .*MANIFEST-\d{6} \(named by CURRENT\)/);
    assert.match(text.stdout, new RegExp(`\\n  level 1: ${manifest.final.levels[1]!.length} file`));

    const first = name(files[0]!.number);
    const [plain, withEntries] = await Promise.all([
      ok(["sst", "dump", first]),
      ok(["sst", "dump", "--entries", first]),
    ]);
    assert.match(plain.stdout, new RegExp(`entries: ${dumps[0]!.properties.entries} `));
    assert.match(plain.stdout, /\nfilter: Bloom, \d+ bits, \d+ probes/);
    assert.match(plain.stdout, /\n {2}block 0: offset 0, \d+ bytes, none, \d+ entr/);
    const entryLines = withEntries.stdout.split("\nentries:\n")[1]!.trimEnd().split("\n");
    assert.equal(entryLines.length, dumps[0]!.entries.length);
    assert.match(entryLines[0]!, /^\d+\t(PUT|DEL)\tkey\d{4}/);
  });

  test("wal dump lists every batch, escapes bytes, and finds a flipped byte", async () => {
    const dir = join(tmp.path, "wal");
    const db = await open(dir, { sync: false });
    for (let i = 0; i < 30; i++) {
      const b = db.batch();
      b.put(i === 7 ? BINARY_KEY : `k${i}`, `value\n${i}`);
      b.delete(`gone${i}`);
      await db.write(b);
    }
    await db.close();
    const log = join(dir, readdirSync(dir).find((n) => n.endsWith(".log"))!);
    const [text, dump] = await Promise.all([
      ok(["wal", "dump", log]),
      json<{
        records: Array<{ offset: number; sequence: number; ops: Array<Record<string, unknown>> }>;
        damage: unknown[];
      }>(["wal", "dump", "--json", log]),
    ]);
    assert.equal(dump.records.length, 30);
    assert.deepEqual(dump.damage, []);
    assert.deepEqual(dump.records[7]!.ops, [
      { keyHex: "ff000a", seq: 15, kind: "PUT", value: "value\n7" },
      { key: "gone7", seq: 16, kind: "DEL" },
    ]);
    assert.match(text.stdout, /\n {2}15\tPUT\t\\xff\\x00\\n\tvalue\\n7\n/);
    assert.match(
      text.stdout,
      /\nrecords: 30 with 60 ops \(sequence numbers 1 \.\. 60\)\nno damage\n$/,
    );
    // --key-hex and --value-hex apart, --hex both.
    const hex = (t: string) => Buffer.from(t).toString("hex");
    const [keysHex, valuesHex, both] = (await Promise.all(
      ["--key-hex", "--value-hex", "--hex"].map((flag) => ok(["wal", "dump", flag, log])),
    )) as [Result, Result, Result];
    const line = (k: string, v: string) => `\n  1\tPUT\t${k}\t${v}\n`;
    assert.ok(keysHex.stdout.includes(line(hex("k0"), "value\\n0")), keysHex.stdout);
    assert.ok(valuesHex.stdout.includes(line("k0", hex("value\n0"))), valuesHex.stdout);
    assert.ok(both.stdout.includes(line(hex("k0"), hex("value\n0"))), both.stdout);
    const valueJson = await json<{ records: Array<{ ops: Array<Record<string, unknown>> }> }>([
      "wal",
      "dump",
      "--json",
      "--value-hex",
      log,
    ]);
    assert.deepEqual(valueJson.records[0]!.ops[0], {
      key: "k0",
      seq: 1,
      kind: "PUT",
      valueHex: hex("value\n0"),
    });

    const at = dump.records[12]!.offset;
    const bytes = readFileSync(log);
    bytes[at + 15]! ^= 0x08;
    writeFileSync(log, bytes);
    const [bad, badJson] = await Promise.all([
      runCli(["wal", "dump", log]),
      runCli(["wal", "dump", "--json", log]),
    ]);
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, new RegExp(`\\ndamage at offset ${at}, \\d+ bytes: corruption`));
    assert.match(bad.stdout, new RegExp(`\\ndamage starts at offset ${at};`));
    const parsed = JSON.parse(badJson.stdout) as { firstDamageOffset: number; records: unknown[] };
    assert.equal(parsed.firstDamageOffset, at);
    assert.equal(parsed.records.length, 29);
  });

  test("wal dump of a file that is no log says so and exits 1", async () => {
    const table = join(data, readdirSync(data).find((n) => n.endsWith(".sst"))!);
    for (const args of [
      ["wal", "dump", table],
      ["wal", "dump", "--json", table],
    ]) {
      const r = await runCli(args);
      assert.equal(r.code, 1, args.join(" "));
      assert.equal(r.stdout, "");
      assert.match(
        r.stderr,
        /^kv-engine wal dump: .*\.sst is not a write-ahead log: no record checks out and it ends as a table file does[^\n]*\n$/,
      );
    }
  });
});

describe("stores", () => {
  test("compact, stats and backup refuse a store another process holds (LOCKED)", async () => {
    const db = await open(data, OPTIONS);
    try {
      const runs = await Promise.all([
        runCli(["stats", "--data-dir", data]),
        runCli(["compact", "--data-dir", data]),
        runCli(["backup", "--data-dir", data, "--to", join(tmp.path, "never")]),
      ]);
      for (const r of runs) {
        assert.equal(r.code, 1);
        assert.match(r.stderr, /LOCKED: .* is in use by another open store/);
        assert.doesNotMatch(r.stderr, /compacting/);
      }
    } finally {
      await db.close();
    }
  });

  test("stats prints the per-level table", async () => {
    const r = await ok(["stats", "--data-dir", data]);
    assert.match(r.stdout, /^Level {2}Files {2}Size\(MiB\)/);
    assert.match(r.stdout, /\n0 +\d+ +\d+\.\d\d /);
    assert.match(r.stdout, /\n6 +\d+ +\d+\.\d\d /);
    assert.match(r.stdout, /\nTotal: \d+ files/);
  });

  test("compact leaves one level with files and the data intact", async () => {
    const r = await ok(["compact", "--data-dir", data]);
    assert.match(r.stdout, /^compacted all keys of .* down to level \d+: \d+ steps?/);
    assert.match(r.stdout, /\nLevel {2}Files before {2}Size before {2}Files after {2}Size after\n/);
    assert.match(r.stderr, /^compact: compacting all keys/);
    assert.match(r.stderr, /\ncompact: 100% done: /);
    assert.ok(!r.stderr.includes("\r") && !r.stderr.includes("\u001b"), "no bar: not a terminal");
    const stats = await json<{ levelFiles: number[] }>(["stats", "--data-dir", data, "--json"]);
    assert.equal(stats.levelFiles.filter((n) => n > 0).length, 1, `${stats.levelFiles}`);
    const db = await open(data, { createIfMissing: false });
    assert.deepEqual(await contents(db), model);
    await db.close();

    const ranged = await ok([
      "compact",
      "--data-dir",
      data,
      "--start",
      "key0010",
      "--end",
      "key0020",
      "--json",
    ]);
    assert.ok(Array.isArray((JSON.parse(ranged.stdout) as { steps: unknown[] }).steps));
  });

  test("backup writes a copy that opens with the data and shares inodes", async () => {
    const to = join(tmp.path, "copy");
    const r = await ok(["backup", "--data-dir", data, "--to", to]);
    assert.match(r.stdout, /: \d+ table files? \(\d+ hard-linked, 0 copied\), \d+ bytes/);
    const tables = readdirSync(to).filter((n) => n.endsWith(".sst"));
    assert.ok(tables.length > 0);
    for (const t of tables) {
      assert.equal(statSync(join(to, t)).ino, statSync(join(data, t)).ino, t);
    }
    assert.ok(!readdirSync(to).some((n) => n.endsWith(".log")));
    const copy = await open(to, { createIfMissing: false });
    assert.deepEqual(await contents(copy), model);
    await copy.close();
    const again = await runCli(["backup", "--data-dir", data, "--to", to]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);
  });
});

describe("usage", () => {
  test("--help for every command; bad usage exits 2; failures exit 1", async () => {
    const help = [
      ["sst", "dump"],
      ["wal", "dump"],
      ["manifest", "dump"],
      ["compact"],
      ["backup"],
      ["stats"],
    ];
    const helps = await Promise.all(help.map((c) => runCli([...c, "--help"])));
    helps.forEach((h, i) => {
      assert.equal(h.code, 0);
      assert.ok(h.stdout.startsWith(`Usage: kv-engine ${help[i]!.join(" ")}`), h.stdout);
    });
    assert.match((await ok(["sst", "--help"])).stdout, /^Usage: kv-engine sst dump/);
    const top = await ok(["--help"]);
    for (const c of ["sst dump", "wal dump", "manifest dump", "compact", "backup", "stats"]) {
      assert.ok(top.stdout.includes(`  ${c}`), c);
    }

    const bad = [
      ["sst"],
      ["wal", "list", "x"],
      ["sst", "dump"],
      ["sst", "dump", "a", "b"],
      ["wal", "dump", "--bogus", "x"],
      ["manifest", "dump"],
      ["manifest", "dump", data, "--num-levels", "1"],
      ["compact"],
      ["compact", "--data-dir", data, "--hex", "--start", "zz"],
      ["backup", "--data-dir", data],
      ["stats", "--data-dir", data, "extra"],
    ];
    const results = await Promise.all(bad.map((args) => runCli(args)));
    results.forEach((r, i) => {
      const args = bad[i]!.join(" ");
      if (args.includes("--hex")) {
        assert.equal(r.code, 1, args); // not hex: reported like the client commands do
        assert.match(r.stderr, /--start is not hex/);
        return;
      }
      assert.equal(r.code, 2, `${args}: ${r.stderr}`);
      assert.match(r.stderr, /Usage: kv-engine/, args);
    });

    const missing = await Promise.all([
      runCli(["sst", "dump", join(tmp.path, "nope.sst")]),
      runCli(["wal", "dump", join(tmp.path, "nope.log")]),
      runCli(["manifest", "dump", join(tmp.path, "nope")]),
      runCli(["stats", "--data-dir", join(tmp.path, "nope")]),
      runCli(["compact", "--data-dir", tmp.path]),
    ]);
    for (const r of missing) {
      assert.equal(r.code, 1, r.stderr);
      assert.ok(r.stderr.length > 0);
    }
    assert.deepEqual(readdirSync(tmp.path).includes("nope"), false, "no store created");
  });
});
