/**
 * The kv-engine command against a real server process: put, get, del and scan with text,
 * --hex, --key-hex, --value-hex and --json output, values from a file or stdin, arguments
 * the shell could not pass as UTF-8, exit codes (0 ok, 1 failure or absent key, 2 bad
 * usage, with the command's usage line only), and --help for every subcommand.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { CLI, runCli, type ServerProcess, startServer } from "../support/server-process.js";
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
  assert.match(empty.stderr, /INVALID_ARGUMENT: 127\.0\.0\.1:\d+: key must not be empty/);
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
    // The reason, the command's usage line and where its help is: not the whole help.
    const lines = r.stderr.trimEnd().split("\n");
    assert.match(lines.at(-2)!, /^Usage: kv-engine/, r.stderr);
    assert.match(lines.at(-1)!, /^Run 'kv-engine .*--help'/, r.stderr);
    assert.ok(!lines.some((l) => /^\s+-/.test(l)), `no option list: ${r.stderr}`);
  }
  const badHex = await runCli(["get", ...addr, "--hex", "xyz"]);
  assert.equal(badHex.code, 1);
  assert.match(badHex.stderr, /KEY is not hex/);
});

test("cas on a single-node server: applied or not (exit 0 or 1) with the value now, absent and delete, usage", async () => {
  assert.equal(
    await ok(["cas", ...addr, "cas-k", "--expect-absent", "--value", "v1"]),
    "applied\nv1\n",
  );
  const lost = await runCli(["cas", ...addr, "cas-k", "--expect-absent", "--value", "v2"]);
  assert.deepEqual([lost.code, lost.stdout], [1, "not applied\nv1\n"]);
  const differs = await runCli([
    "cas",
    ...addr,
    "cas-k",
    "--expect",
    "v0",
    "--value",
    "v2",
    "--json",
  ]);
  assert.deepEqual(
    [differs.code, differs.stdout],
    [1, '{"applied":false,"found":true,"value":"v1"}\n'],
  );
  assert.equal(await ok(["get", ...addr, "cas-k"]), "v1\n");
  assert.equal(
    await ok(["cas", ...addr, "cas-k", "--expect", "v1", "--delete", "--json"]),
    '{"applied":true,"found":false}\n',
  );
  const gone = await runCli(["get", ...addr, "cas-k"]);
  assert.equal(gone.code, 1);
  assert.equal(
    await ok(["cas", ...addr, "--hex", "cafe", "--expect-absent", "--value", "00ff"]),
    "applied\n00ff\n",
  );
  for (const args of [
    ["cas-k", "--value", "x"],
    ["cas-k", "--expect", "a", "--expect-absent", "--value", "x"],
    ["cas-k", "--expect", "a"],
    ["cas-k", "--expect", "a", "--value", "x", "--delete"],
  ]) {
    const r = await runCli(["cas", ...addr, ...args]);
    assert.equal(r.code, 2, `kv-engine cas ${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, /give exactly one of/);
  }
  assert.equal((await runCli(["get", ...addr, "cas-k"])).code, 1, "refused usage wrote nothing");
});

test("every subcommand prints its --help and exits 0", async () => {
  const commands = ["serve", "put", "get", "del", "scan", "cas", "cluster"];
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

/** Runs the CLI with `input` on its stdin. */
function runCliWithInput(
  args: string[],
  input: Buffer,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString("utf8");
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

test("put --value-file takes the value's bytes from a file, or from stdin with -", async () => {
  // Bytes no command line could carry: NUL, invalid UTF-8, and more than ARG_MAX allows.
  const big = Buffer.alloc(300_000);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 256;
  const file = `${dir.path}/value.bin`;
  writeFileSync(file, big);
  await ok(["put", ...addr, "from-file", "--value-file", file]);
  const hex = (await ok(["get", ...addr, "--value-hex", "from-file"])).trim();
  assert.ok(Buffer.from(hex, "hex").equals(big), "the value is the file's bytes");

  const piped = await runCliWithInput(
    ["put", ...addr, "--key-hex", "00ff", "--value-file", "-"],
    Buffer.from([0, 1, 0xfe]),
  );
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(await ok(["get", ...addr, "--hex", "00ff"]), "0001fe\n");
  const empty = await runCliWithInput(
    ["put", ...addr, "empty-stdin", "--value-file", "-"],
    Buffer.alloc(0),
  );
  assert.equal(empty.code, 0, empty.stderr);
  assert.equal(await ok(["get", ...addr, "--json", "empty-stdin"]), '{"found":true,"value":""}\n');

  const both = await runCli(["put", ...addr, "k", "v", "--value-file", file]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /VALUE or --value-file, not both/);
  const missing = await runCli(["put", ...addr, "k", "--value-file", `${dir.path}/absent`]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read --value-file .*absent/);
});

test("binary values round-trip: put --value-file, get --out FILE and get --raw", async () => {
  const bytes = Buffer.alloc(70_000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131) % 256; // NULs, newlines, not UTF-8
  const file = `${dir.path}/binary.in`;
  writeFileSync(file, bytes);
  await ok(["put", ...addr, "bin", "--value-file", file]);
  const out = `${dir.path}/binary.out`;
  assert.equal(await ok(["get", ...addr, "bin", "--out", out]), "");
  assert.ok(readFileSync(out).equals(bytes), "--out holds the value's bytes");
  const raw = await new Promise<Buffer>((resolve, reject) =>
    execFile(
      process.execPath,
      [CLI, "get", ...addr, "--raw", "bin"],
      { encoding: "buffer", maxBuffer: 1 << 20 },
      (err, stdout) => (err === null ? resolve(stdout) : reject(err)),
    ),
  );
  assert.ok(raw.equals(bytes), "--raw writes the bytes as they are, no newline");
  // An absent key: exit 1, the file left alone.
  const absent = await runCli(["get", ...addr, "no-such-key", "--out", out]);
  assert.equal(absent.code, 1);
  assert.ok(readFileSync(out).equals(bytes));
  const both = await runCli(["get", ...addr, "bin", "--raw", "--json"]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /give one of --out, --raw and --json/);
});

test("a key or value starting with '-' works after '--', wherever the options stand", async () => {
  await ok(["put", ...addr, "--", "-k", "-v1"]);
  assert.equal(await ok(["get", ...addr, "--", "-k"]), "-v1\n");
  await ok(["--addr", server.address, "--", "put", "-k", "-v2"]);
  assert.equal(await ok(["--addr", server.address, "get", "--", "-k"]), "-v2\n");
  await ok(["put", "--json", ...addr, "--", "-k", "-v3"]);
  assert.equal(await ok(["--addr", server.address, "get", "--", "-k"]), "-v3\n");
  // An option's value starting with '-' is written --opt=-value; the message says so.
  const cas = await runCli(["cas", ...addr, "--expect", "-v3", "--value", "-v4", "--", "-k"]);
  assert.equal(cas.code, 2);
  assert.match(cas.stderr, /the value of --expect starts with '-': write it --expect=-v3/);
  assert.equal(
    await ok(["cas", ...addr, "--expect=-v3", "--value=-v4", "--", "-k"]),
    "applied\n-v4\n",
  );
});

test("--key-hex and --value-hex apply to keys and values apart; --hex to both", async () => {
  await ok(["put", ...addr, "--key-hex", "6b31", "plain value"]);
  assert.equal(await ok(["get", ...addr, "k1"]), "plain value\n");
  await ok(["put", ...addr, "--value-hex", "k2", "ff00"]);
  assert.equal(await ok(["get", ...addr, "--value-hex", "k2"]), "ff00\n");
  assert.equal(await ok(["get", ...addr, "--key-hex", "6b32"]), "\\xff\\x00\n");
  assert.equal(
    await ok(["scan", ...addr, "--start", "k1", "--end", "k3", "--value-hex"]),
    `k1\t${Buffer.from("plain value").toString("hex")}\nk2\tff00\n`,
  );
  assert.equal(
    await ok(["scan", ...addr, "--start", "6b31", "--end", "6b33", "--key-hex"]),
    "6b31\tplain value\n6b32\t\\xff\\x00\n",
  );
  assert.equal(
    await ok(["scan", ...addr, "--start", "6b32", "--end", "6b33", "--key-hex", "--json"]),
    '{"keyHex":"6b32","valueHex":"ff00"}\n',
  );
  assert.equal(
    await ok(["scan", ...addr, "--start", "6b31", "--end", "6b32", "--hex"]),
    `6b31\t${Buffer.from("plain value").toString("hex")}\n`,
  );
  await ok(["del", ...addr, "--key-hex", "6b31"]);
  assert.equal((await runCli(["get", ...addr, "k1"])).code, 1);
});

test("an argument holding bytes that are not UTF-8 is refused with a hint to use hex", async () => {
  // Through a shell, as a user would: printf makes the raw byte 0xff, which Node reads as
  // U+FFFD in process.argv.
  const viaShell = (script: string): Promise<{ code: number; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        "/bin/sh",
        ["-c", script, "sh", process.execPath, CLI, ...addr],
        { encoding: "utf8" },
        (error, _stdout, stderr) =>
          resolve({ code: error === null ? 0 : Number(error.code), stderr }),
      );
    });
  const key = await viaShell(`"$1" "$2" put "$3" "$4" "$(printf 'a\\377')" v`);
  assert.equal(key.code, 1);
  assert.match(key.stderr, /KEY holds U\+FFFD.*not UTF-8.*--key-hex/);
  const value = await viaShell(`"$1" "$2" put "$3" "$4" k "$(printf '\\377\\376')"`);
  assert.equal(value.code, 1);
  assert.match(value.stderr, /VALUE holds U\+FFFD.*--value-hex/);
  const start = await runCli(["scan", ...addr, "--start", "x\uFFFD"]);
  assert.equal(start.code, 1);
  assert.match(start.stderr, /--start holds U\+FFFD.*--key-hex/);
  // Nothing was stored.
  assert.equal((await runCli(["get", ...addr, "k"])).code, 1);
});
