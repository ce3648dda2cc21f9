/**
 * The kv-engine command against a real server process: put, get, del and scan with text,
 * --hex and --json output, exit codes (0 ok, 1 failure or absent key, 2 bad usage), and
 * --help for every subcommand.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { runCli, type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("kv-cli-");
let server: ServerProcess;
let addr: string[];

before(async () => {
  server = await startServer(`${dir.path}/nested/data`, ["--no-sync"]);
  addr = ["--addr", server.address];
});

after(async () => {
  const code = await server?.stop();
  dir.remove();
  assert.equal(code, 0);
});

async function ok(args: string[]): Promise<string> {
  const r = await runCli(args);
  assert.equal(r.code, 0, `kv-engine ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

test("put, get, del and scan with text, hex and JSON output", async () => {
  await ok(["put", ...addr, "apple", "red\tand\nround"]);
  await ok(["put", ...addr, "--hex", "ff00", "c328"]); // binary key and non-UTF-8 value
  await ok(["put", ...addr, "empty", ""]);
  assert.equal(await ok(["get", ...addr, "apple"]), "red\\tand\\nround\n");
  assert.equal(await ok(["get", ...addr, "--hex", "ff00"]), "c328\n");
  assert.equal(
    await ok(["get", ...addr, "--hex", "ff00", "--json"]),
    '{"found":true,"valueHex":"c328"}\n',
  );
  assert.equal(
    await ok(["get", ...addr, "--json", "apple"]),
    '{"found":true,"value":"red\\tand\\nround"}\n',
  );
  assert.equal(await ok(["get", ...addr, "empty"]), "\n");

  assert.equal(
    await ok(["scan", ...addr]),
    "apple\tred\\tand\\nround\nempty\t\n\\xff\\x00\t\\xc3(\n",
  );
  assert.equal(await ok(["scan", ...addr, "--start", "b", "--end", "f"]), "empty\t\n");
  const hex = (text: string) => Buffer.from(text).toString("hex");
  assert.equal(
    await ok(["scan", ...addr, "--limit", "1", "--hex"]),
    `${hex("apple")}\t${hex("red\tand\nround")}\n`,
  );
  const json = (await ok(["scan", ...addr, "--json"]))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  assert.deepEqual(json, [
    { key: "apple", value: "red\tand\nround" },
    { key: "empty", value: "" },
    { keyHex: "ff00", valueHex: "c328" },
  ]);

  await ok(["del", ...addr, "apple"]);
  const absent = await runCli(["get", ...addr, "apple"]);
  assert.deepEqual([absent.code, absent.stdout], [1, ""]);
  assert.match(absent.stderr, /not found/);
  const absentJson = await runCli(["get", ...addr, "--json", "apple"]);
  assert.deepEqual([absentJson.code, absentJson.stdout], [1, '{"found":false}\n']);
});

test("failures exit 1 with the status; bad usage exits 2 with the usage", async () => {
  const empty = await runCli(["put", ...addr, "", "v"]);
  assert.equal(empty.code, 1);
  assert.match(empty.stderr, /INVALID_ARGUMENT: key must not be empty/);
  const inverted = await runCli(["scan", ...addr, "--start", "z", "--end", "a"]);
  assert.equal(inverted.code, 1);
  assert.match(inverted.stderr, /INVALID_ARGUMENT/);
  const down = await runCli(["get", "--addr", "127.0.0.1:1", "--timeout-ms", "2000", "k"]);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /UNAVAILABLE/);

  const usage: Array<Promise<{ args: string[]; r: Awaited<ReturnType<typeof runCli>> }>> = [];
  for (const args of [
    ["put", ...addr, "only-key"],
    ["get", ...addr, "--bogus", "k"],
    ["scan", ...addr, "--limit", "-3"],
    ["serve"],
    ["serve", "--data-dir", dir.path, "--port", "70000"],
    ["frobnicate"],
  ]) {
    usage.push(runCli(args).then((r) => ({ args, r })));
  }
  for (const { args, r } of await Promise.all(usage)) {
    assert.equal(r.code, 2, `kv-engine ${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, /Usage: kv-engine/);
  }
  const badHex = await runCli(["get", ...addr, "--hex", "xyz"]);
  assert.equal(badHex.code, 1);
  assert.match(badHex.stderr, /KEY is not hex/);
});

test("every subcommand prints its --help and exits 0", async () => {
  const commands = ["serve", "put", "get", "del", "scan"];
  const results = await Promise.all(commands.map((c) => runCli([c, "--help"])));
  results.forEach((r, i) => {
    assert.equal(r.code, 0);
    assert.match(r.stdout, new RegExp(`^Usage: kv-engine ${commands[i]}`));
  });
  const top = await runCli(["--help"]);
  assert.match(top.stdout, /serve .*\n.*put KEY VALUE/s);
});

test("serve fails with exit 1 when the data directory is locked by another server", async () => {
  const r = await runCli(["serve", "--data-dir", `${dir.path}/nested/data`, "--port", "0"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /in use by another open store/);
});
