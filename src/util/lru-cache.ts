/**
 * LruCache: a map bounded by the total "charge" of its values, evicting the least recently
 * used entries first. Used by the block cache (charge = bytes) and the table cache
 * (charge = 1 per open table).
 *
 * Structure: a Map from key to node plus an intrusive doubly-linked list of the nodes in
 * recency order. Every operation is O(1) (eviction O(1) per evicted entry). A hit costs one
 * Map lookup and relinking the node at the front: no allocation, no Map rewrite; a caller
 * that kept the entry's handle (returned by `set`) can skip the lookup with `touch`.
 *
 * Contract:
 * - `sizeOf(value)` gives an entry's charge when it is stored; it must be a finite number
 *   >= 0 and is not asked again.
 * - `onEvict(key, value)` is called for every entry that leaves the cache, whatever the
 *   reason: evicted to make room, replaced by `set` of the same key, removed by `delete`,
 *   or dropped by `clear`. A value whose charge alone exceeds the capacity is never stored:
 *   `set` hands it to `onEvict` at once. So each value passed to `set` reaches `onEvict`
 *   exactly once, unless it is still cached. `onEvict` must not call back into the cache.
 * - `get` counts a hit or a miss and makes the entry the most recently used; `peek` and
 *   `has` do neither.
 */

/**
 * A stored entry, as returned by `set`: `touch(handle)` is a hit without the key lookup.
 * `cached` turns false for good when the entry leaves the cache.
 */
export interface LruHandle<V> {
  readonly value: V;
  readonly cached: boolean;
}

class LruNode<K, V> implements LruHandle<V> {
  prev: LruNode<K, V> | null = null;
  next: LruNode<K, V> | null = null;
  cached = true;

  constructor(
    readonly owner: LruCache<K, V>,
    readonly key: K,
    public value: V,
    public charge: number,
  ) {}
}

export class LruCache<K, V> {
  private readonly map = new Map<K, LruNode<K, V>>();
  /** Most recently used. */
  private head: LruNode<K, V> | null = null;
  /** Least recently used: evicted first. */
  private tail: LruNode<K, V> | null = null;
  private totalCharge = 0;
  private readonly capacityValue: number;
  /** Lookups by `get` that found their key. */
  hits = 0;
  /** Lookups by `get` that did not. */
  misses = 0;

  constructor(
    capacity: number,
    private readonly sizeOf: (value: V) => number,
    private readonly onEvict?: (key: K, value: V) => void,
  ) {
    if (!(capacity >= 0) || !Number.isFinite(capacity)) {
      throw new RangeError(`LruCache capacity must be a finite number >= 0, got ${capacity}`);
    }
    this.capacityValue = capacity;
  }

  /** The bound on the total charge. */
  get capacity(): number {
    return this.capacityValue;
  }

  /** Total charge of the cached entries. */
  get size(): number {
    return this.totalCharge;
  }

  /** Number of cached entries. */
  get count(): number {
    return this.map.size;
  }

  /** The value for key (now the most recently used), or undefined; counts a hit or miss. */
  get(key: K): V | undefined {
    const node = this.map.get(key);
    if (node === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    if (node !== this.head) {
      this.unlink(node);
      this.linkFront(node);
    }
    return node.value;
  }

  /**
   * A hit through a handle `set` returned: makes the entry the most recently used and
   * counts a hit. False (and nothing counted) when the entry is no longer cached or the
   * handle is not from this cache.
   */
  touch(handle: LruHandle<V>): boolean {
    const node = handle as LruNode<K, V>;
    if (!node.cached || node.owner !== this) return false;
    this.hits++;
    if (node !== this.head) {
      this.unlink(node);
      this.linkFront(node);
    }
    return true;
  }

  /** The value for key without touching recency or the statistics. */
  peek(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  /**
   * Stores value under key as the most recently used entry, replacing any previous value
   * (which goes to onEvict), then evicts least recently used entries until the total
   * charge is within the capacity. Returns the entry's handle, or undefined when the value
   * was too big to store.
   */
  set(key: K, value: V): LruHandle<V> | undefined {
    const charge = this.sizeOf(value);
    if (!(charge >= 0) || !Number.isFinite(charge)) {
      throw new RangeError(`LruCache charge must be a finite number >= 0, got ${charge}`);
    }
    const old = this.map.get(key);
    if (old !== undefined) this.remove(old);
    if (charge > this.capacityValue) {
      this.onEvict?.(key, value);
      return undefined;
    }
    const node = new LruNode(this, key, value, charge);
    this.map.set(key, node);
    this.linkFront(node);
    this.totalCharge += charge;
    while (this.totalCharge > this.capacityValue && this.tail !== null) this.remove(this.tail);
    return node.cached ? node : undefined;
  }

  /** Removes key (its value goes to onEvict); true iff it was present. */
  delete(key: K): boolean {
    const node = this.map.get(key);
    if (node === undefined) return false;
    this.remove(node);
    return true;
  }

  /** Removes every entry, least recently used first (each goes to onEvict). */
  clear(): void {
    while (this.tail !== null) this.remove(this.tail);
  }

  /** The keys, most recently used first. Do not modify the cache while iterating. */
  *keys(): IterableIterator<K> {
    for (let n = this.head; n !== null; n = n.next) yield n.key;
  }

  private remove(node: LruNode<K, V>): void {
    node.cached = false;
    this.unlink(node);
    this.map.delete(node.key);
    this.totalCharge -= node.charge;
    this.onEvict?.(node.key, node.value);
  }

  private unlink(node: LruNode<K, V>): void {
    const { prev, next } = node;
    if (prev === null) this.head = next;
    else prev.next = next;
    if (next === null) this.tail = prev;
    else next.prev = prev;
    node.prev = null;
    node.next = null;
  }

  private linkFront(node: LruNode<K, V>): void {
    node.next = this.head;
    if (this.head !== null) this.head.prev = node;
    this.head = node;
    if (this.tail === null) this.tail = node;
  }
}
