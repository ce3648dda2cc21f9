/**
 * A real `kv-engine serve` child process on 127.0.0.1 and an ephemeral port, for
 * end-to-end tests. `start` resolves once the server printed its listening line.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { exited, firstLine } from "./child.js";

/** The compiled CLI (dist/src/cli/main.js). */
export const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  /** "127.0.0.1:PORT" */
  address: string;
  /** Everything the server wrote to stderr so far. */
  stderr: () => string;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Who the server runs as (default: this process's user), e.g. an unprivileged one. */
export interface ServerUser {
  uid?: number;
  gid?: number;
}

export async function startServer(
  dataDir: string,
  extraArgs: string[] = [],
  user: ServerUser = {},
): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--data-dir", dataDir, "--port", "0", ...extraArgs],
    { stdio: ["ignore", "pipe", "pipe"], ...user },
  );
  let err = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  let line: string;
  try {
    line = await firstLine(child);
  } catch (e) {
    throw new Error(`server did not start: ${(e as Error).message}\n${err}`);
  }
  const match = /^kv-engine listening on (127\.0\.0\.1:\d+)$/.exec(line);
  if (match === null) throw new Error(`unexpected first line: ${line}`);
  return {
    child,
    address: match[1]!,
    stderr: () => err,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited(child);
      return child.exitCode;
    },
  };
}

/** Runs the CLI with `args`; resolves with its exit code and output (never rejects). */
export function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: "utf8" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}
