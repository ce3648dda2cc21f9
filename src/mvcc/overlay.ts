/**
 * The changes of write transactions that ended but are not yet visible in the store, so
 * that a pipelined write's reads see every earlier write (types.ts, MvccWrite). A change
 * joins when its write ends and leaves once its batch is visible; the store and the
 * overlay may both hold it meanwhile, and then they agree.
 */
import type { KeyValue } from "./types.js";

/** One change of a key: its new version, or `kv` undefined for a deletion. */
export interface PendingChange {
  /** keyId(key). */
  readonly id: string;
  readonly key: Uint8Array;
  readonly revision: number;
  readonly kv: KeyValue | undefined;
}

/** A key as a map key (latin1 keeps every byte). */
export function keyId(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
}

export class Overlay {
  /** Per key, its pending changes in revision order. */
  private readonly byKey = new Map<string, PendingChange[]>();

  get size(): number {
    return this.byKey.size;
  }

  add(changes: Iterable<PendingChange>): void {
    for (const c of changes) {
      const list = this.byKey.get(c.id);
      if (list === undefined) this.byKey.set(c.id, [c]);
      else list.push(c);
    }
  }

  /** Removes `changes` (added earlier, visible now: the oldest of their keys). */
  remove(changes: Iterable<PendingChange>): void {
    for (const c of changes) {
      const list = this.byKey.get(c.id);
      if (list === undefined) continue;
      if (list.length === 1 && list[0] === c) {
        this.byKey.delete(c.id);
        continue;
      }
      const i = list.indexOf(c);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.byKey.delete(c.id);
    }
  }

  /** The newest pending change of the key `id`, if any. */
  latest(id: string): PendingChange | undefined {
    const list = this.byKey.get(id);
    return list === undefined ? undefined : list[list.length - 1];
  }

  /**
   * Into `out` (keyed by keyId): for each key with `accept(key)`, its newest change at or
   * below `rev`, unless `out` holds the key already.
   */
  collect(
    rev: number,
    accept: (key: Uint8Array) => boolean,
    out: Map<string, PendingChange>,
  ): void {
    for (const [id, list] of this.byKey) {
      if (out.has(id)) continue;
      for (let i = list.length - 1; i >= 0; i--) {
        const c = list[i]!;
        if (c.revision > rev) continue;
        if (accept(c.key)) out.set(id, c);
        break;
      }
    }
  }
}
