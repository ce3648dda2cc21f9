import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Path of a compiled fixture script (dist/test/fixtures/NAME.js). */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}.js`, import.meta.url));
}

/** Starts `node script ...args` with stdout piped. */
export function startNode(script: string, args: string[]): ChildProcess {
  return spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
}

/** Resolves with the first stdout line of the child (rejects if it exits first). */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (chunk: Buffer) => {
      buf += chunk.toString("utf8");
      const i = buf.indexOf("\n");
      if (i >= 0) {
        child.stdout?.off("data", onData);
        resolve(buf.slice(0, i));
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`child exited with ${code} before a line`)));
  });
}

/** Resolves when the child has exited. */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}
