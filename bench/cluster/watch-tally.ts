/**
 * What a watcher process of the watch benchmarks (./watch-client.ts) counts, whatever
 * carries its watches: each watcher's events and last revision, the round's totals, the
 * latency of each stamped event (./watch-stamp.ts), the process's CPU over the round, and
 * when every watcher reached the revision the parent waits for. A subclass opens the
 * watches (`create`), reports each created watcher (`added`) and each response's events
 * (`delivered`), and closes them (`close`).
 */
import type { WatchClientResult, WatchClientSpec } from "./watch-client.js";
import { measuredSentNs, sinceEpochNs } from "./watch-stamp.js";

export interface WatcherState {
  events: number;
  lastRevision: number;
}

export abstract class WatchTally {
  private readonly watchers: WatcherState[] = [];
  private readonly epoch: bigint;
  private onCreated: (() => void) | undefined;
  private until: number | undefined;
  private onReached: (() => void) | undefined;
  private cpu0: NodeJS.CpuUsage | undefined;
  readonly result: WatchClientResult = {
    complete: false,
    events: 0,
    minEvents: 0,
    maxEvents: 0,
    minRevision: 0,
    responses: 0,
    goNs: 0,
    firstEventNs: 0,
    lastEventNs: 0,
    latenciesNs: [],
    clientCpuSeconds: 0,
  };

  constructor(
    readonly spec: WatchClientSpec,
    protected readonly fail: (error: string) => void,
  ) {
    this.epoch = BigInt(spec.epochNs);
  }

  /** Creates the watchers; resolves once every one is created. */
  abstract create(): Promise<void>;

  abstract close(): void;

  /** Nanoseconds since the run's epoch. */
  protected now(): number {
    return sinceEpochNs(this.epoch);
  }

  /** Resolves once `spec.watchers` watchers were added. */
  protected allCreated(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.onCreated = resolve;
      if (this.watchers.length >= this.spec.watchers) resolve();
    });
  }

  /** A watcher was created: its state, to pass to `delivered`. */
  protected added(): WatcherState {
    const w: WatcherState = { events: 0, lastRevision: 0 };
    this.watchers.push(w);
    if (this.watchers.length === this.spec.watchers) this.onCreated?.();
    return w;
  }

  /** With `spec.latency`: records the latency of an event whose value is `value`, read at `now`. */
  protected stamped(value: Uint8Array, now: number): void {
    const sent = measuredSentNs(value);
    if (sent !== undefined) this.result.latenciesNs.push(now - sent);
  }

  /** One response of `events` events to watcher `w`, the last at `lastRevision`, read at `now`. */
  protected delivered(w: WatcherState, events: number, lastRevision: number, now: number): void {
    w.events += events;
    w.lastRevision = lastRevision;
    const r = this.result;
    r.events += events;
    r.responses++;
    if (r.firstEventNs === 0) r.firstEventNs = now;
    r.lastEventNs = now;
    if (this.until !== undefined && w.lastRevision >= this.until) this.check();
  }

  /** Starts a round: the counts start from zero. */
  go(): void {
    this.cpu0 = process.cpuUsage();
    const r = this.result;
    r.goNs = this.now();
    r.complete = false;
    r.events = r.responses = r.firstEventNs = r.lastEventNs = 0;
    r.latenciesNs.length = 0;
    this.until = undefined;
    for (const w of this.watchers) w.events = 0;
  }

  /** Resolves once every watcher reached `revision`, or after `withinMs`. */
  reach(revision: number, withinMs: number): Promise<void> {
    this.until = revision;
    const reached = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, withinMs);
      this.onReached = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.check();
    return reached;
  }

  private check(): void {
    if (this.until === undefined || this.watchers.length < this.spec.watchers) return;
    for (const w of this.watchers) if (w.lastRevision < this.until) return;
    this.result.complete = true;
    this.onReached?.();
  }

  /** The round's result. */
  finish(): WatchClientResult {
    const r = this.result;
    const cpu = process.cpuUsage(this.cpu0);
    r.clientCpuSeconds = (cpu.user + cpu.system) / 1e6;
    r.minEvents = Math.min(...this.watchers.map((w) => w.events));
    r.maxEvents = Math.max(...this.watchers.map((w) => w.events));
    r.minRevision = Math.min(...this.watchers.map((w) => w.lastRevision));
    if (this.watchers.length < this.spec.watchers) r.minEvents = r.minRevision = 0;
    return r;
  }
}
