/**
 * The watchers of a watcher process (./watch-client.ts) through a whole etcd client library
 * (`spec.client`, ./etcd-client-ops.ts), one watch of [spec.key, spec.rangeEnd) per
 * watcher, on the library's own streams and connection:
 *
 * - "etcd-client", "etcd-client-grpc-js": EtcdClient.watch, an async iterator of batches
 *   (one stream per watch). A watch from now (startRevision 0) starts at the member's
 *   current revision + 1, read first through the same client, so that every event after
 *   "ready" is delivered, as with a watcher created before it.
 * - "etcd3": the `etcd3` npm package's watch builder (its watchers share one stream),
 *   created before `create` resolves.
 *
 * Each batch (response) with events counts as one response; its last event's mod revision
 * is the watcher's last revision.
 */
import { Etcd3, type IWatchResponse, type Watcher } from "etcd3";
import { EtcdClient } from "../../src/client/index.js";
import type { WatchClientSpec } from "./watch-client.js";
import { type WatcherState, WatchTally } from "./watch-tally.js";

export class LibraryWatching extends WatchTally {
  private readonly stop = new AbortController();
  private readonly ours: EtcdClient | undefined;
  private readonly etcd3: Etcd3 | undefined;
  private readonly etcd3Watchers: Watcher[] = [];

  constructor(spec: WatchClientSpec, fail: (error: string) => void) {
    super(spec, fail);
    if (spec.client === "etcd3") {
      this.etcd3 = new Etcd3({ hosts: `http://${spec.endpoint}` });
    } else {
      const transport = spec.client === "etcd-client-grpc-js" ? "grpc-js" : "lean";
      this.ours = new EtcdClient(spec.endpoint, { transport });
    }
  }

  async create(): Promise<void> {
    const from = Buffer.from(this.spec.key, "latin1");
    const to = Buffer.from(this.spec.rangeEnd, "latin1");
    const done = this.allCreated();
    if (this.etcd3 !== undefined) {
      for (let i = 0; i < this.spec.watchers; i++) await this.watchEtcd3(this.etcd3, from, to);
    } else if (this.ours !== undefined) {
      const c = this.ours;
      let start = this.spec.startRevision;
      if (start === 0) {
        start = (await c.range({ from, to }, { countOnly: true })).header.revision + 1;
      }
      for (let i = 0; i < this.spec.watchers; i++) this.watchOurs(c, from, to, start);
    }
    return done;
  }

  private watchOurs(c: EtcdClient, from: Buffer, to: Buffer, startRevision: number): void {
    const w = this.added();
    const latency = this.spec.latency;
    const watch = async () => {
      const batches = c.watch({ from, to }, { startRevision, signal: this.stop.signal });
      for await (const batch of batches) {
        const events = batch.events;
        const last = events[events.length - 1];
        if (last === undefined) continue;
        const now = this.now();
        if (latency) for (const e of events) this.stamped(e.kv.value, now);
        this.delivered(w, events.length, last.kv.modRevision, now);
      }
    };
    watch().catch((err: unknown) => {
      if (!this.stop.signal.aborted) this.fail(`watch: ${String(err)}`);
    });
  }

  private async watchEtcd3(c: Etcd3, start: Buffer, end: Buffer): Promise<void> {
    let builder = c.watch().inRange({ start, end });
    if (this.spec.startRevision !== 0)
      builder = builder.startRevision(`${this.spec.startRevision}`);
    const watcher = builder.watcher();
    this.etcd3Watchers.push(watcher);
    let w: WatcherState | undefined;
    const latency = this.spec.latency;
    watcher.on("data", (res: IWatchResponse) => {
      const events = res.events;
      const last = events[events.length - 1];
      if (last === undefined || w === undefined) return;
      const now = this.now();
      if (latency) for (const e of events) this.stamped(e.kv.value, now);
      this.delivered(w, events.length, Number(last.kv.mod_revision), now);
    });
    watcher.on("error", (err: Error) => this.fail(`etcd3 watch: ${err.message}`));
    await new Promise<void>((resolve) => watcher.once("connected", () => resolve()));
    w = this.added();
  }

  close(): void {
    this.stop.abort();
    this.ours?.close();
    for (const w of this.etcd3Watchers) w.cancel().catch(() => {});
    this.etcd3?.close();
  }
}
