/**
 * Progress of `kv-engine compact` on stderr. On a terminal: one bar redrawn in place
 * (`\r`, then erase to the end of the line), cut to the terminal's width, ended with a
 * newline by `done`. Otherwise (a pipe, a file, a test): one line per step, no control
 * characters.
 */
import type { CompactStep } from "../tools/compact.js";
import { formatBytes } from "./text-table.js";

/** Where progress goes: process.stderr, or a stand-in in tests. */
export interface ProgressOutput {
  readonly isTTY?: boolean | undefined;
  readonly columns?: number | undefined;
  write(text: string): unknown;
}

const BAR_WIDTH = 24;

/** "level 0 -> 1: 4 files in, 1 out, read 1.20 MiB, wrote 1.10 MiB" */
export function describeStep(step: CompactStep): string {
  const e = step.event;
  const how = e.trivialMove
    ? "moved"
    : `${e.inputFiles} files in, ${e.outputFiles} out, read ${formatBytes(e.bytesRead)}, ` +
      `wrote ${formatBytes(e.bytesWritten)}`;
  return `level ${e.level} -> ${e.outputLevel}${e.manual ? "" : " (background)"}: ${how}`;
}

export class CompactProgressPrinter {
  private drawn = false;

  constructor(private readonly out: ProgressOutput) {}

  /** Shows that compaction started (0 %). */
  start(what: string): void {
    if (this.out.isTTY === true) this.draw(0, what);
    else this.out.write(`compact: ${what}\n`);
  }

  step(step: CompactStep): void {
    const text = `step ${step.step}: ${describeStep(step)}`;
    if (this.out.isTTY === true) this.draw(step.percent, text);
    else this.out.write(`compact: ${step.percent.toFixed(0).padStart(3)}% ${text}\n`);
  }

  /** Draws 100 % and ends the bar's line. */
  done(text: string): void {
    if (this.out.isTTY === true) {
      this.draw(100, text);
      this.out.write("\n");
      this.drawn = false;
    } else {
      this.out.write(`compact: 100% ${text}\n`);
    }
  }

  private draw(percent: number, text: string): void {
    const filled = Math.round((BAR_WIDTH * percent) / 100);
    const bar = `[${"#".repeat(filled)}${".".repeat(BAR_WIDTH - filled)}] ${percent.toFixed(0).padStart(3)}% ${text}`;
    const columns = this.out.columns ?? 0;
    const width = columns > 0 ? columns : 80; // 0 when the terminal does not say
    const line = bar.length >= width ? bar.slice(0, Math.max(width - 1, 0)) : bar;
    this.out.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** True while a bar is on screen without its final newline. */
  get open(): boolean {
    return this.drawn;
  }
}
