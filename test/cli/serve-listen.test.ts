/**
 * Where `kv-engine serve` listens: a busy --port or --metrics-port fails at once with one
 * line on stderr and exit 1, before the store is opened (the data directory is not even
 * created); listening beyond loopback without TLS or without a token logs a warn-level
 * line and writes a warning to stderr, and listening on loopback, or with both, does not.
 * Real server processes; the beyond-loopback ones listen on 0.0.0.0 and are sent nothing.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { after, test } from "node:test";
import {
  exposureWarning,
  isLoopbackAddress,
  isLoopbackHost,
  listenFailure,
} from "../../src/cli/listen-checks.js";
import { exited, firstLine } from "../support/child.js";
import { CLI, runCli } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { makeTlsFiles } from "../support/tls-certs.js";

const tmp = tempDir("kv-serve-listen-");
after(() => tmp.remove());

/** A listener on 127.0.0.1 holding a free port; resolves with it and its port. */
async function holdPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  assert.ok(typeof address === "object" && address !== null);
  return { server, port: address.port };
}

test("a busy --port or --metrics-port fails in one line, before the store is opened", async () => {
  const { server, port } = await holdPort();
  try {
    const dir = join(tmp.path, "never-created");
    const r = await runCli(["serve", "--data-dir", dir, "--port", String(port)]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `kv-engine serve: cannot listen on 127.0.0.1:${port} (--port): the port is in use ` +
        "(another kv-engine serve?); choose another --port, or 0 for a free one\n",
    );
    assert.equal(existsSync(dir), false, "the store was not opened");
    const m = await runCli([
      "serve",
      "--data-dir",
      dir,
      "--port",
      "0",
      "--metrics-port",
      String(port),
    ]);
    assert.equal(m.code, 1);
    assert.match(
      m.stderr,
      /^kv-engine serve: cannot listen on .* \(--metrics-port\): the port is in use[^\n]*\n$/,
    );
    assert.equal(existsSync(dir), false);
  } finally {
    server.close();
  }
});

test("listenFailure names the cause in words", () => {
  const err = (code: string) => Object.assign(new Error(`listen ${code}`), { code });
  assert.match(
    listenFailure(err("EACCES"), "h", 80, "--port"),
    /h:80 \(--port\): permission denied/,
  );
  assert.match(listenFailure(err("EADDRNOTAVAIL"), "10.9.9.9", 1, "--port"), /no interface/);
  // grpc-js puts the code in the message only.
  const grpc = new Error("No address added out of total 1 resolved errors: [listen EADDRINUSE: x]");
  assert.match(listenFailure(grpc, "h", 1, "--port"), /the port is in use/);
});

test("loopback is 127.0.0.0/8 and ::1 (however written), and names that resolve only there", async () => {
  for (const a of [
    "127.0.0.1",
    "127.8.9.10",
    "::1",
    "[::1]",
    "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1",
  ]) {
    assert.ok(isLoopbackAddress(a), a);
  }
  for (const a of [
    "0.0.0.0",
    "::",
    "10.0.0.1",
    "192.168.1.2",
    "::ffff:10.0.0.1",
    "fe80::1",
    "128.0.0.1",
  ]) {
    assert.ok(!isLoopbackAddress(a), a);
  }
  assert.ok(await isLoopbackHost("localhost"));
  assert.ok(!(await isLoopbackHost("0.0.0.0")));
  assert.ok(!(await isLoopbackHost("no-such-host.invalid")));
});

test("exposureWarning says what is missing, and nothing when TLS and a token are both on", () => {
  assert.equal(exposureWarning("0.0.0.0:1", true, true), undefined);
  assert.match(
    exposureWarning("0.0.0.0:1", false, false)!,
    /without TLS and without an auth token: anyone who can reach it can read and write/,
  );
  assert.match(
    exposureWarning("0.0.0.0:1", true, false)!,
    /without an auth token: .*--auth-token-file/,
  );
  assert.match(exposureWarning("0.0.0.0:1", false, true)!, /without TLS: .*clear text.*--tls-cert/);
});

/** Starts serve with `args`, waits for its listening line, stops it; resolves with stderr. */
async function serveStderr(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--no-sync", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  try {
    assert.match(await firstLine(child), /^kv-engine listening on /);
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${(err as Error).message}\n${stderr}`);
  }
  child.kill("SIGTERM");
  await exited(child);
  assert.equal(child.exitCode, 0, stderr);
  return stderr;
}

interface LogLine {
  level: number;
  event?: string;
  msg?: string;
  tls?: boolean;
  authToken?: boolean;
}

function logLines(stderr: string): LogLine[] {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);
}

test("serving beyond loopback without TLS or a token warns in the log and on stderr", async () => {
  const stderr = await serveStderr(["--data-dir", join(tmp.path, "open"), "--host", "0.0.0.0"]);
  const warn = logLines(stderr).filter((l) => l.event === "exposed");
  assert.equal(warn.length, 1, stderr);
  assert.equal(warn[0]!.level, 40, "pino's warn level");
  assert.deepEqual([warn[0]!.tls, warn[0]!.authToken], [false, false]);
  assert.match(
    warn[0]!.msg!,
    /^listening on 0\.0\.0\.0:\d+, beyond loopback, without TLS and without an auth token/,
  );
  assert.match(stderr, /^kv-engine serve: warning: listening on 0\.0\.0\.0:\d+, beyond loopback/m);
});

test("no warning on loopback, nor beyond it with TLS and a token", async () => {
  const quiet = await serveStderr(["--data-dir", join(tmp.path, "loopback")]);
  assert.doesNotMatch(quiet, /warning|"exposed"/);

  makeTlsFiles(tmp.path); // server.crt and server.key in tmp.path
  const token = join(tmp.path, "token");
  writeFileSync(token, "s3cret\n");
  const secured = await serveStderr([
    "--data-dir",
    join(tmp.path, "secured"),
    "--host",
    "0.0.0.0",
    "--tls-cert",
    join(tmp.path, "server.crt"),
    "--tls-key",
    join(tmp.path, "server.key"),
    "--auth-token-file",
    token,
  ]);
  assert.doesNotMatch(secured, /warning|"exposed"/);
});
