/**
 * An in-memory multi-version store (src/mvcc/types.ts's `Mvcc`), written for clarity, not
 * speed: every change ever made, in a list, and compaction as a filter over it. The
 * reference the real store (src/mvcc/) is compared with, and a stand-in store for tests of
 * the layers above it.
 */
import { WriteBatch } from "../../src/batch/write-batch.js";
import { KvError } from "../../src/errors.js";
import type {
  Compaction,
  KeyValue,
  Mvcc,
  MvccReadView,
  MvccWrite,
  RangeOptions,
  RangeResult,
} from "../../src/mvcc/types.js";

/** One change: a put's new version, or a deletion (`kv` then holds the deleted key only). */
interface Change {
  readonly revision: number;
  readonly deleted: boolean;
  readonly kv: KeyValue;
}

function cmp(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** True iff `k` is in etcd's range [key, end) (end empty: key alone; [0]: key onwards). */
export function inRange(k: Uint8Array, key: Uint8Array, end: Uint8Array): boolean {
  if (end.length === 0) return cmp(k, key) === 0;
  if (end.length === 1 && end[0] === 0) return cmp(k, key) >= 0;
  return cmp(k, key) >= 0 && cmp(k, end) < 0;
}

export class MvccModel implements Mvcc {
  /** Every change kept (compaction removes some), in revision order. */
  private changes: Change[] = [];
  /** A new store is at revision 1, as etcd's is; its first write gets 2. */
  revision = 1;
  compactRevision = 0;
  private open = false;
  /** The `extra` operations handed to ends and compactions, in order. */
  readonly extras: WriteBatch[] = [];

  /** The latest version of each key as of `rev`, live ones only, in key order. */
  private liveAt(rev: number, changes: readonly Change[]): KeyValue[] {
    const latest = new Map<string, Change>();
    for (const c of changes) {
      if (c.revision > rev) break;
      latest.set(Buffer.from(c.kv.key).toString("hex"), c);
    }
    return [...latest.values()]
      .filter((c) => !c.deleted)
      .map((c) => c.kv)
      .sort((a, b) => cmp(a.key, b.key));
  }

  private rangeOver(
    changes: readonly Change[],
    viewRevision: number,
    key: Uint8Array,
    end: Uint8Array,
    options: RangeOptions,
  ): RangeResult {
    const rev =
      options.revision === undefined || options.revision <= 0 ? viewRevision : options.revision;
    if (rev > viewRevision)
      throw new KvError("FUTURE_REVISION", "mvcc: required revision is a future revision");
    if (rev < this.compactRevision)
      throw new KvError("COMPACTED", "mvcc: required revision has been compacted");
    const all = this.liveAt(rev, changes).filter((kv) => inRange(kv.key, key, end));
    const limit = options.limit ?? 0;
    const kvs = options.countOnly === true ? [] : limit > 0 ? all.slice(0, limit) : all;
    return { kvs, count: all.length, revision: rev };
  }

  read(): MvccReadView {
    const changes = this.changes.slice();
    const revision = this.revision;
    const view = {
      revision,
      compactRevision: this.compactRevision,
      range: async (key: Uint8Array, end: Uint8Array, options: RangeOptions = {}) =>
        this.rangeOver(changes, revision, key, end, options),
      release: () => {},
    };
    return view;
  }

  write(): MvccWrite {
    if (this.open) throw new Error("MvccModel: a write is already open");
    this.open = true;
    const model = this;
    const begin = this.revision;
    const own: Change[] = [];
    const all = (): Change[] => [...this.changes, ...own];
    const latest = (key: Uint8Array): Change | undefined => {
      const list = all();
      for (let i = list.length - 1; i >= 0; i--) {
        const c = list[i]!;
        if (cmp(c.kv.key, key) === 0) return c;
      }
      return undefined;
    };
    const w: MvccWrite = {
      beginRevision: begin,
      get revision() {
        return own.length > 0 ? begin + 1 : begin;
      },
      get compactRevision() {
        return model.compactRevision;
      },
      range: async (key, end, options = {}) =>
        model.rangeOver(all(), w.revision, key, end, options),
      put: async (key, value, lease) => {
        const prev = latest(key);
        const live = prev !== undefined && !prev.deleted ? prev.kv : undefined;
        const rev = begin + 1;
        own.push({
          revision: rev,
          deleted: false,
          kv: {
            key: key.slice(),
            value: value.slice(),
            lease,
            modRevision: rev,
            createRevision: live === undefined ? rev : live.createRevision,
            version: live === undefined ? 1 : live.version + 1,
          },
        });
        return live;
      },
      deleteRange: async (key, end) => {
        const gone = model
          .liveAt(Number.MAX_SAFE_INTEGER, all())
          .filter((kv) => inRange(kv.key, key, end));
        const rev = begin + 1;
        for (const kv of gone) {
          own.push({
            revision: rev,
            deleted: true,
            kv: {
              key: kv.key,
              value: new Uint8Array(0),
              lease: 0n,
              modRevision: rev,
              createRevision: 0,
              version: 0,
            },
          });
        }
        return gone;
      },
      end: async (extra) => {
        model.open = false;
        model.changes.push(...own);
        if (own.length > 0) model.revision = begin + 1;
        if (extra !== undefined) {
          const b = new WriteBatch();
          extra(b);
          model.extras.push(b);
        }
      },
    };
    return w;
  }

  compact(revision: number, extra?: (batch: WriteBatch) => void): Compaction {
    if (this.open) throw new Error("MvccModel: compact while a write is open");
    if (revision <= this.compactRevision)
      throw new KvError("COMPACTED", "mvcc: required revision has been compacted");
    if (revision > this.revision)
      throw new KvError("FUTURE_REVISION", "mvcc: required revision is a future revision");
    // Keep every change above `revision`, and each key's newest change at or below it
    // unless that is a deletion.
    const newestAtOrBelow = new Map<string, Change>();
    for (const c of this.changes) {
      if (c.revision <= revision) newestAtOrBelow.set(Buffer.from(c.kv.key).toString("hex"), c);
    }
    const kept = new Set([...newestAtOrBelow.values()].filter((c) => !c.deleted));
    this.changes = this.changes.filter((c) => c.revision > revision || kept.has(c));
    this.compactRevision = revision;
    if (extra !== undefined) {
      const b = new WriteBatch();
      extra(b);
      this.extras.push(b);
    }
    return { done: Promise.resolve() };
  }

  private trailer: ((batch: WriteBatch) => void) | undefined;

  /** The model's writes are visible at once: nothing to gather but the trailer's operations. */
  hold(_maxBytes: number, trailer?: (batch: WriteBatch) => void): void {
    this.trailer = trailer;
  }

  release(): void {
    const trailer = this.trailer;
    this.trailer = undefined;
    if (trailer === undefined) return;
    const b = new WriteBatch();
    trailer(b);
    this.extras.push(b);
  }
}
