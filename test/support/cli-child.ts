/**
 * A `kv-engine` command that runs until stopped (watch, lock, elect, lease keep-alive), as
 * a child process whose output lines the test reads as they come.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { exited } from "./child.js";
import { CLI } from "./server-process.js";
import { waitFor } from "./wait-for.js";

export class CliChild {
  /** Every child started and not yet exited (stopAll kills them). */
  private static readonly running = new Set<CliChild>();
  readonly child: ChildProcess;
  private out = "";
  private err = "";

  constructor(args: string[], stdin?: string) {
    this.child = spawn(process.execPath, [CLI, ...args], {
      stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    this.child.stdout?.on("data", (c: Buffer) => {
      this.out += c.toString("utf8");
    });
    this.child.stderr?.on("data", (c: Buffer) => {
      this.err += c.toString("utf8");
    });
    if (stdin !== undefined) this.child.stdin?.end(stdin);
    CliChild.running.add(this);
    this.child.once("exit", () => CliChild.running.delete(this));
  }

  /** Kills (SIGKILL) every child still running: a test's `after`, so a failed test leaves none. */
  static async stopAll(): Promise<void> {
    await Promise.all([...CliChild.running].map((c) => c.stop("SIGKILL")));
  }

  /** The complete stdout lines so far. */
  get lines(): string[] {
    const all = this.out.split("\n");
    all.pop();
    return all;
  }

  get stderr(): string {
    return this.err;
  }

  get stdout(): string {
    return this.out;
  }

  /** Waits until stdout has at least `n` complete lines; returns them. */
  async waitLines(n: number, limitMs = 10_000): Promise<string[]> {
    await waitFor(
      () => this.lines.length >= n || this.child.exitCode !== null,
      `${n} line(s) of output`,
      limitMs,
    );
    if (this.lines.length < n) {
      throw new Error(
        `exited (${this.child.exitCode}) after ${this.lines.length} line(s): ${this.err}`,
      );
    }
    return this.lines;
  }

  /** Resolves with the exit code (signal: 128 + nothing known: -1). */
  async exit(): Promise<number> {
    await exited(this.child);
    return this.child.exitCode ?? -1;
  }

  /** Sends `signal` and resolves with the exit code. */
  async stop(signal: NodeJS.Signals = "SIGINT"): Promise<number> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exit();
  }
}
