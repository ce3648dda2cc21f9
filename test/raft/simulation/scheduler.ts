/**
 * The simulation's virtual clock and its queue of timed events. Time is an integer
 * number of virtual milliseconds; nothing in the simulation reads a real clock. Events
 * due at the same time run in the order they were scheduled, so a run is a pure
 * function of its seed.
 */

interface Event {
  readonly time: number;
  readonly seq: number;
  readonly run: () => void;
}

export class Scheduler {
  #now = 0;
  #seq = 0;
  #stamp = 0;
  readonly #heap: Event[] = [];

  /** The current virtual time (ms). */
  get now(): number {
    return this.#now;
  }

  /**
   * A strictly increasing number per call: the time of client history events, so that an
   * operation invoked after another completed is ordered after it even within one ms.
   */
  stamp(): number {
    return ++this.#stamp;
  }

  /** Events waiting. */
  get pending(): number {
    return this.#heap.length;
  }

  /** Runs `run` at virtual time now + delay (delay >= 0; 0: later in this same ms). */
  after(delay: number, run: () => void): void {
    this.at(this.#now + Math.max(0, Math.floor(delay)), run);
  }

  /** Runs `run` at virtual time `time` (not before now). */
  at(time: number, run: () => void): void {
    const e: Event = { time: Math.max(time, this.#now), seq: this.#seq++, run };
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(e, h[parent]!)) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = e;
  }

  /** Advances the clock to `time` (never backwards). */
  advanceTo(time: number): void {
    if (time > this.#now) this.#now = time;
  }

  /** Removes and returns the next event due at or before now, or undefined. */
  nextDue(): (() => void) | undefined {
    const h = this.#heap;
    const top = h[0];
    if (top === undefined || top.time > this.#now) return undefined;
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const r = l + 1;
        const child = r < h.length && before(h[r]!, h[l]!) ? r : l;
        if (!before(h[child]!, last)) break;
        h[i] = h[child]!;
        i = child;
      }
      h[i] = last;
    }
    return top.run;
  }
}

function before(a: Event, b: Event): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
