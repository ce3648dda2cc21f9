/**
 * etcdctl as a long-running child for tests (watch, lock, elect): started against
 * `endpoints`, its output lines gathered, signalled or killed and awaited by the test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { exited } from "./child.js";

export interface CtlChild {
  readonly child: ChildProcess;
  /** The non-empty lines it printed so far. */
  lines(): string[];
  stderr(): string;
  /** Sends SIGINT (etcdctl's lock and elect then release and exit) and waits for the exit code. */
  interrupt(): Promise<number | null>;
  /** Kills it (SIGKILL) unless it exited, and waits for it. */
  stop(): Promise<void>;
}

export function startCtl(binary: string, endpoints: readonly string[], args: string[]): CtlChild {
  const child: ChildProcess = spawn(binary, ["--endpoints", endpoints.join(","), ...args], {
    env: { ...process.env, ETCDCTL_API: "3" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    lines: () => out.split("\n").filter((l) => l !== ""),
    stderr: () => err,
    async interrupt() {
      if (running()) child.kill("SIGINT");
      await exited(child);
      return child.exitCode;
    },
    async stop() {
      if (running()) child.kill("SIGKILL");
      await exited(child);
    },
  };
}
