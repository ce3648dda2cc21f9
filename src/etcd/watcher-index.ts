/**
 * A set of watchers found by the keys they watch (etcd's watcherGroup): one-key watchers
 * in a map by key, range watchers grouped by their range, so that finding who watches a
 * key costs one map lookup plus one test per distinct range (a thousand watchers of one
 * prefix are one range).
 */
import { keyId } from "../mvcc/overlay.js";
import type { Watcher } from "./watcher.js";

interface RangeGroup {
  /** One of `watchers` (they all watch the same range). */
  sample: Watcher;
  readonly watchers: Set<Watcher>;
}

function rangeId(w: Watcher): string {
  return `${keyId(w.key)}\u0000${w.key.length}\u0000${keyId(w.end)}`;
}

export class WatcherIndex implements Iterable<Watcher> {
  private readonly keys = new Map<string, Set<Watcher>>();
  private readonly ranges = new Map<string, RangeGroup>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(w: Watcher): void {
    if (w.single) {
      const id = keyId(w.key);
      let set = this.keys.get(id);
      if (set === undefined) {
        set = new Set();
        this.keys.set(id, set);
      }
      if (!set.has(w)) this.count++;
      set.add(w);
      return;
    }
    const id = rangeId(w);
    let g = this.ranges.get(id);
    if (g === undefined) {
      g = { sample: w, watchers: new Set() };
      this.ranges.set(id, g);
    }
    if (!g.watchers.has(w)) this.count++;
    g.watchers.add(w);
  }

  /** Removes `w`; true iff it was there. */
  delete(w: Watcher): boolean {
    if (w.single) {
      const id = keyId(w.key);
      const set = this.keys.get(id);
      if (set === undefined || !set.delete(w)) return false;
      if (set.size === 0) this.keys.delete(id);
    } else {
      const id = rangeId(w);
      const g = this.ranges.get(id);
      if (g === undefined || !g.watchers.delete(w)) return false;
      if (g.watchers.size === 0) this.ranges.delete(id);
      else if (g.sample === w) g.sample = g.watchers.values().next().value as Watcher;
    }
    this.count--;
    return true;
  }

  /** Calls `fn` for each watcher that watches `key`. */
  forEachMatch(key: Uint8Array, fn: (w: Watcher) => void): void {
    if (this.keys.size > 0) {
      const set = this.keys.get(keyId(key));
      if (set !== undefined) for (const w of set) fn(w);
    }
    for (const g of this.ranges.values()) {
      if (g.sample.matches(key)) for (const w of g.watchers) fn(w);
    }
  }

  *[Symbol.iterator](): Iterator<Watcher> {
    for (const set of this.keys.values()) yield* set;
    for (const g of this.ranges.values()) yield* g.watchers;
  }

  clear(): void {
    this.keys.clear();
    this.ranges.clear();
    this.count = 0;
  }
}
