/**
 * Debian's etcd (etcd-server, 3.4) as a child process for tests: one member on free
 * 127.0.0.1 ports, a fresh data directory, killed and removed by `stop()`. And the rule
 * for tests that need etcd's binaries: skipped when one is not on PATH, except in CI
 * (CI=true), where .ci/run installs them and such a test fails instead.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { TestContext } from "node:test";
import { exited } from "./child.js";
import { freePort } from "./cluster-processes.js";
import { EtcdGrpcClient } from "./etcd-grpc-client.js";

/** The path of `name` on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * The path of `name` (etcd or etcdctl); when absent, skips the test outside CI, fails it
 * in CI. Returns undefined when the test was skipped.
 */
export function requireBinary(t: TestContext, name: "etcd" | "etcdctl"): string | undefined {
  const path = onPath(name);
  if (path !== undefined) return path;
  const pkg = name === "etcd" ? "etcd-server" : "etcd-client";
  if (process.env["CI"] === "true")
    throw new Error(`${name} is not on PATH in CI (.ci/run installs ${pkg})`);
  t.skip(`${name} is not on PATH (apt-get install ${pkg})`);
  return undefined;
}

export interface EtcdProcess {
  /** "127.0.0.1:PORT", its client address. */
  readonly address: string;
  /** Sends `signal` to the etcd process (SIGSTOP, SIGCONT...). */
  signal(signal: NodeJS.Signals): void;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 30_000;

/**
 * Starts a one-member etcd (`extraArgs` appended to its command line) and resolves once
 * it answers a Range. Its data directory is on
 * /dev/shm when there is one (its fsyncs are then cheap), else under the temp directory.
 */
export async function startEtcd(binary: string, extraArgs: string[] = []): Promise<EtcdProcess> {
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const path = mkdtempSync(join(base, "kv-etcd-"));
  const dir = { path, remove: () => rmSync(path, { recursive: true, force: true }) };
  const client = await freePort();
  const peer = await freePort();
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const child: ChildProcess = spawn(
    binary,
    [
      "--name",
      "default",
      "--data-dir",
      join(dir.path, "data"),
      "--listen-client-urls",
      clientUrl,
      "--advertise-client-urls",
      clientUrl,
      "--listen-peer-urls",
      peerUrl,
      "--initial-advertise-peer-urls",
      peerUrl,
      "--initial-cluster",
      `default=${peerUrl}`,
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
      "--log-level",
      "error",
      ...extraArgs,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited(child);
    dir.remove();
  };
  const address = `127.0.0.1:${client}`;
  const probe = new EtcdGrpcClient(address);
  try {
    const until = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode}): ${stderr}`);
      try {
        await probe.range({ key: Buffer.from("probe") });
        break;
      } catch (err) {
        if (Date.now() > until)
          throw new Error(`etcd did not answer in time: ${String(err)} ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    probe.close();
    await stop();
    throw err;
  }
  probe.close();
  return { address, signal: (sig) => void child.kill(sig), stop };
}
