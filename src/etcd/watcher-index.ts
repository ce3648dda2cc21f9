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
  /** One-key watchers by key: the watcher itself while it is the key's only one. */
  private readonly keys = new Map<string, Watcher | Set<Watcher>>();
  private readonly ranges = new Map<string, RangeGroup>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(w: Watcher): void {
    if (w.single) {
      const id = keyId(w.key);
      const there = this.keys.get(id);
      if (there === w || (there instanceof Set && there.has(w))) return;
      this.count++;
      if (there === undefined) this.keys.set(id, w);
      else if (there instanceof Set) there.add(w);
      else this.keys.set(id, new Set([there, w]));
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
      const there = this.keys.get(id);
      if (there === w) this.keys.delete(id);
      else if (!(there instanceof Set) || !there.delete(w)) return false;
      else if (there.size === 0) this.keys.delete(id);
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
      const there = this.keys.get(keyId(key));
      if (there instanceof Set) for (const w of there) fn(w);
      else if (there !== undefined) fn(there);
    }
    for (const g of this.ranges.values()) {
      if (g.sample.matches(key)) for (const w of g.watchers) fn(w);
    }
  }

  *[Symbol.iterator](): Iterator<Watcher> {
    for (const there of this.keys.values()) {
      if (there instanceof Set) yield* there;
      else yield there;
    }
    for (const g of this.ranges.values()) yield* g.watchers;
  }

  clear(): void {
    this.keys.clear();
    this.ranges.clear();
    this.count = 0;
  }
}
