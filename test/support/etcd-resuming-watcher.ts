/**
 * A watcher that resumes as etcd's clientv3 does, for tests under faults: one prefix (or
 * range) watch on one member at a time; after the stream fails, ends, is canceled, or
 * answers no progress request for `stallMs` (a paused member), it opens the watch on the
 * next member with start_revision = the last event's revision + 1 (with `bookmarks`, the
 * last progress notification's revision + 1 when that is higher: a bookmark promises that
 * every later event is above it).
 *
 * It records every event it receives (with the member and the stream it came on), every
 * progress notification (with how many events came before it), every resume, and the
 * revisions lost to compaction (a watch canceled with compact_revision C resumes at C,
 * and [next, C) is recorded as a gap). Checks local to one stream go to `violations`:
 * an event at or below a progress revision of the same stream (etcd 15220), a revision
 * split over two responses (atomic), events out of order within a response or between
 * responses.
 */
import { status } from "@grpc/grpc-js";
import type { Event } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { Event_EventType } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { kvOf } from "./etcd-txn-wire.js";
import { EtcdWatchClient } from "./etcd-watch-client.js";
import type { TxnKv } from "./linearizability/index.js";

/** A key's version as an event's kv or prev_kv carries it. */
export type WatchedKv = TxnKv;

export interface WatchedEvent {
  readonly type: "put" | "delete";
  readonly revision: number;
  readonly kv: WatchedKv;
  readonly prevKv: WatchedKv | undefined;
  /** The member that sent it, and the number of the stream (0, 1, ...) it came on. */
  readonly member: string;
  readonly stream: number;
}

export interface ResumingWatcherOptions {
  readonly name: string;
  /** Member name -> client address; the watcher starts on `first` and goes round them. */
  readonly members: ReadonlyMap<string, string>;
  readonly first: string;
  readonly key: string;
  readonly rangeEnd: string;
  /** The first revision watched. */
  readonly startRevision: number;
  readonly prevKv: boolean;
  /** Opens its streams with etcd's `hasleader` metadata (ended when the member has no leader). */
  readonly requireLeader: boolean;
  /** Resumes after a progress notification's revision too. */
  readonly bookmarks: boolean;
  /** Milliseconds between progress requests. */
  readonly progressEveryMs: number;
  /** Milliseconds without any response after which the stream counts as stalled. */
  readonly stallMs: number;
}

export class ResumingWatcher {
  readonly events: WatchedEvent[] = [];
  /** Progress notifications: the revision, and how many events had been received before. */
  readonly progress: { revision: number; events: number; member: string }[] = [];
  /** "+1.23s n2 from 57 (stream ended: ...)" */
  readonly resumes: string[] = [];
  /** Revisions [from, to) lost to compaction between two streams. */
  readonly gaps: { from: number; to: number }[] = [];
  readonly violations: string[] = [];
  /** The next revision to watch from. */
  next: number;
  /** The highest progress revision received. */
  bookmark = 0;
  private streams = 0;
  private readonly started = Date.now();

  constructor(private readonly o: ResumingWatcherOptions) {
    this.next = o.startRevision;
  }

  get name(): string {
    return this.o.name;
  }

  get prevKv(): boolean {
    return this.o.prevKv;
  }

  get startRevision(): number {
    return this.o.startRevision;
  }

  /** The highest revision it is known to have every event up to (its last event or bookmark). */
  get through(): number {
    return Math.max(this.next - 1, this.bookmark);
  }

  /** Watches until `stop()`, moving to another member after every failure. */
  async run(stop: () => boolean): Promise<void> {
    const names = [...this.o.members.keys()];
    let at = names.indexOf(this.o.first);
    while (!stop()) {
      const member = names[at]!;
      const reason = await this.watchOn(member, stop);
      if (stop()) break;
      at = (at + 1) % names.length;
      this.resumes.push(
        `+${((Date.now() - this.started) / 1000).toFixed(2)}s ${names[at]} from ${this.next} (${member}: ${reason})`,
      );
      // A member down answers at once: not a busy loop.
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** One stream on `member`; resolves with why it ended. */
  private async watchOn(member: string, stop: () => boolean): Promise<string> {
    const stream = this.streams++;
    const w = new EtcdWatchClient(
      this.o.members.get(member)!,
      this.o.requireLeader ? { hasleader: "true" } : {},
    ).open();
    const from = this.o.bookmarks ? Math.max(this.next, this.bookmark + 1) : this.next;
    this.next = from;
    let lastRevision = 0;
    let progressAt = 0;
    let lastAnswer = Date.now();
    let asked = 0;
    try {
      w.create({
        key: new TextEncoder().encode(this.o.key),
        rangeEnd: new TextEncoder().encode(this.o.rangeEnd),
        startRevision: BigInt(from),
        prevKv: this.o.prevKv,
      });
      while (!stop()) {
        if (Date.now() - asked >= this.o.progressEveryMs) {
          w.progress();
          asked = Date.now();
        }
        let r: Awaited<ReturnType<EtcdWatchClient["next"]>>;
        try {
          r = await w.next(this.o.progressEveryMs);
        } catch (err) {
          if (w.ended !== undefined) {
            const e = w.ended;
            return e === null ? "stream ended" : `${status[e.code] ?? e.code}: ${e.details}`;
          }
          if (Date.now() - lastAnswer > this.o.stallMs) return "stalled";
          if (!String(err).includes("no watch response")) return String(err);
          continue;
        }
        lastAnswer = Date.now();
        if (r.compactRevision > 0n) {
          const to = Number(r.compactRevision);
          if (to > this.next) this.gaps.push({ from: this.next, to });
          this.next = Math.max(this.next, to);
          return `compacted at ${to}`;
        }
        if (r.canceled) return `canceled: ${r.cancelReason}`;
        if (r.created) continue;
        const header = Number(r.header?.revision ?? 0n);
        if (r.events.length === 0) {
          if (r.watchId !== -1n) continue;
          // A progress notification: every event at or below it was sent before it.
          if (header < progressAt) {
            this.violations.push(
              `${this.o.name} stream ${stream} on ${member}: progress ${header} after progress ${progressAt}`,
            );
          }
          progressAt = Math.max(progressAt, header);
          this.bookmark = Math.max(this.bookmark, header);
          this.progress.push({ revision: header, events: this.events.length, member });
          continue;
        }
        this.take(r.events, member, stream, lastRevision, progressAt, header);
        lastRevision = Number(r.events[r.events.length - 1]!.kv?.modRevision ?? 0n);
        this.next = lastRevision + 1;
      }
      return "stopped";
    } finally {
      w.close();
    }
  }

  /** Records one response's events, checking what one stream promises. */
  private take(
    events: readonly Event[],
    member: string,
    stream: number,
    lastRevision: number,
    progressAt: number,
    header: number,
  ): void {
    const where = `${this.o.name} stream ${stream} on ${member}`;
    let before = { revision: lastRevision, key: "" };
    for (const [i, e] of events.entries()) {
      if (e.kv === undefined) {
        this.violations.push(`${where}: an event without kv`);
        continue;
      }
      const kv = kvOf(e.kv);
      const revision = kv.modRevision;
      if (i === 0 && revision === lastRevision) {
        this.violations.push(`${where}: revision ${revision} split over two responses`);
      }
      if (
        revision < before.revision ||
        (revision === before.revision && i > 0 && kv.key <= before.key)
      ) {
        this.violations.push(
          `${where}: ${kv.key}@${revision} after ${before.key}@${before.revision}`,
        );
      }
      if (revision <= progressAt) {
        this.violations.push(
          `${where}: event at ${revision} after a progress notification at ${progressAt}`,
        );
      }
      if (revision < this.next) {
        this.violations.push(
          `${where}: event at ${revision} below the watched revision ${this.next}`,
        );
      }
      if (revision > header) {
        this.violations.push(`${where}: event at ${revision} above its header revision ${header}`);
      }
      before = { revision, key: kv.key };
      this.events.push({
        type: e.type === Event_EventType.DELETE ? "delete" : "put",
        revision,
        kv,
        prevKv: e.prevKv === undefined ? undefined : kvOf(e.prevKv),
        member,
        stream,
      });
    }
  }
}
