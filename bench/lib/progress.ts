/**
 * Progress of a benchmark run on stderr: one line per run, `[i/total  p%] what ... result`.
 * On a terminal the line of the run in progress also shows a bar of the runs done and the
 * run's elapsed seconds, redrawn every second; otherwise (a pipe, a file) plain lines only.
 */

const BAR_WIDTH = 20;
const REDRAW_MS = 1000;

export class Progress {
  private done = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly tty = process.stderr.isTTY === true;

  constructor(private readonly total: number) {}

  private prefix(): string {
    const pct = this.total === 0 ? 100 : Math.floor((100 * this.done) / this.total);
    const width = String(this.total).length;
    return `[${String(this.done).padStart(width)}/${this.total} ${String(pct).padStart(3)}%]`;
  }

  private bar(): string {
    const filled = Math.round((BAR_WIDTH * (this.done - 1)) / Math.max(1, this.total));
    return `${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}`;
  }

  /** A run that needs no child (e.g. a missing store, skipped): one finished line. */
  skip(what: string, result: string): void {
    this.done++;
    process.stderr.write(`${this.prefix()} ${what} · ${result}\n`);
  }

  /** Starts the line of a run; `end` finishes it. */
  start(what: string): void {
    this.done++;
    const head = `${this.prefix()} ${what}`;
    if (!this.tty) {
      process.stderr.write(`${head} ... `);
      return;
    }
    const t0 = Date.now();
    const draw = () => {
      const s = Math.round((Date.now() - t0) / 1000);
      process.stderr.write(`\r\x1b[K${head} ${this.bar()} ${s} s`);
    };
    draw();
    this.timer = setInterval(draw, REDRAW_MS);
  }

  end(what: string, result: string): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.tty) process.stderr.write(`\r\x1b[K${this.prefix()} ${what} ... `);
    process.stderr.write(`${result}\n`);
  }
}
