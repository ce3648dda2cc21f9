/**
 * The table's Bloom filter: one filter per file over the distinct USER keys (docs/format/
 * sstable.md, "Filter block"). Layout: the bit array (at least 64 bits, a whole number of
 * bytes), then one byte k, the number of probes.
 *
 * Hash: LevelDB's 32-bit Murmur-like hash (util/hash.cc) with seed 0xbc9f1d34. Probes use
 * double hashing (Kirsch-Mitzenmacher): h, h + delta, h + 2 delta, ... (mod 2^32) with
 * delta = h rotated right by 17 bits; probe i tests bit (h_i mod bits), bit b of the array
 * being bit (b mod 8) of byte (b div 8). This is LevelDB's bloom.cc, so the same keys give
 * the same filter bytes.
 *
 * `bloomHash(key)` is exported so a lookup hashes its key once and probes the filters of
 * many files with `mayContainHash`.
 */

/** Seed of the filter hash (LevelDB's BloomHash). Do not change: stored on disk. */
export const BLOOM_HASH_SEED = 0xbc9f1d34;
const M = 0xc6a4a793;
/** A filter never has fewer bits than this (so tiny tables do not saturate). */
export const BLOOM_MIN_BITS = 64;
/** Largest k a filter may store; a reader treats a larger k as "may contain" (LevelDB). */
export const BLOOM_MAX_PROBES = 30;

/**
 * LevelDB's Hash(data, n, seed): 4-byte little-endian words mixed by multiply and
 * xor-shift, then the 1-3 trailing bytes (as unsigned bytes). Result in [0, 2^32).
 */
export function leveldbHash(key: Uint8Array, seed: number): number {
  return leveldbHashRange(key, 0, key.length, seed);
}

/** leveldbHash of data[start, start + n), without a view of the range. */
export function leveldbHashRange(data: Uint8Array, start: number, n: number, seed: number): number {
  let h = seed ^ Math.imul(n, M);
  const end = start + n - (n & 3);
  let i = start;
  for (; i < end; i += 4) {
    h = (h + (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))) | 0;
    h = Math.imul(h, M);
    h ^= h >>> 16;
  }
  const rest = start + n - i;
  if (rest > 0) {
    if (rest === 3) h = (h + (data[i + 2]! << 16)) | 0;
    if (rest >= 2) h = (h + (data[i + 1]! << 8)) | 0;
    h = (h + data[i]!) | 0;
    h = Math.imul(h, M);
    h ^= h >>> 24;
  }
  return h >>> 0;
}

/**
 * h mod bits for h in [0, 2^32) and bits in [1, 2^32). Same result as `h % bits`, which V8
 * compiles to a float modulus call when h does not fit an int32 (slower: docs/benchmarks/
 * tables.md). The
 * quotient is exact: h / bits is at least 1/bits away from the next integer, more than
 * the rounding error of a double for numbers below 2^32.
 */
function bitIndex(h: number, bits: number): number {
  return h - Math.floor(h / bits) * bits;
}

/** The filter hash of a user key; compute once per lookup, probe many filters with it. */
export function bloomHash(key: Uint8Array): number {
  return leveldbHashRange(key, 0, key.length, BLOOM_HASH_SEED);
}

/** bloomHash of the user key src[start, start + n), without a view of it. */
export function bloomHashRange(src: Uint8Array, start: number, n: number): number {
  return leveldbHashRange(src, start, n, BLOOM_HASH_SEED);
}

/** k for a bits-per-key budget: round(bitsPerKey × ln 2), within [1, 30]. */
export function bloomProbes(bitsPerKey: number): number {
  const k = Math.round(bitsPerKey * Math.LN2);
  return k < 1 ? 1 : k > BLOOM_MAX_PROBES ? BLOOM_MAX_PROBES : k;
}

/** `reset` drops a hash array longer than this (a huge table's) instead of keeping it. */
const KEEP_HASHES = 1 << 18;

/**
 * Collects the hashes of the keys (4 bytes each, not the keys) and builds the filter.
 * Call order: `add*` then `finish` once; `reset` starts a new filter with the same memory.
 */
export class BloomFilterBuilder {
  private hashes = new Uint32Array(1024);
  private n = 0;

  constructor(readonly bitsPerKey: number) {
    if (!(bitsPerKey > 0) || !Number.isFinite(bitsPerKey)) {
      throw new RangeError(`bloom bitsPerKey must be a finite number > 0, got ${bitsPerKey}`);
    }
  }

  /** Number of hashes added. */
  get count(): number {
    return this.n;
  }

  addKey(key: Uint8Array): void {
    this.addHash(bloomHash(key));
  }

  addHash(h: number): void {
    if (this.n === this.hashes.length) {
      const grown = new Uint32Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.n++] = h;
  }

  /** Length of the filter `finish` would return now. */
  get filterBytes(): number {
    const bits = Math.ceil(this.n * this.bitsPerKey);
    return Math.ceil((bits < BLOOM_MIN_BITS ? BLOOM_MIN_BITS : bits) / 8) + 1;
  }

  /** Forgets the hashes added, keeping their memory for the next filter (unless huge). */
  reset(): void {
    if (this.hashes.length > KEEP_HASHES) this.hashes = new Uint32Array(1024);
    this.n = 0;
  }

  /**
   * The filter bytes: ceil(max(n × bitsPerKey, 64) / 8) bytes of bits, then k. Written
   * into the front of `scratch` when it is long enough (the result is then a view of it,
   * valid until the caller reuses it), else into new memory.
   */
  finish(scratch?: Uint8Array): Uint8Array {
    const k = bloomProbes(this.bitsPerKey);
    let bits = Math.ceil(this.n * this.bitsPerKey);
    if (bits < BLOOM_MIN_BITS) bits = BLOOM_MIN_BITS;
    const bytes = Math.ceil(bits / 8);
    bits = bytes * 8;
    let out: Uint8Array;
    if (scratch !== undefined && scratch.length > bytes) {
      out = scratch.subarray(0, bytes + 1);
      out.fill(0, 0, bytes);
    } else {
      out = new Uint8Array(bytes + 1);
    }
    out[bytes] = k;
    const hashes = this.hashes;
    for (let i = 0; i < this.n; i++) {
      let h = hashes[i]!;
      const delta = ((h >>> 17) | (h << 15)) >>> 0;
      for (let j = 0; j < k; j++) {
        const pos = bitIndex(h, bits);
        out[pos >>> 3]! |= 1 << (pos & 7);
        h = (h + delta) >>> 0;
      }
    }
    return out;
  }
}

/** A filter read from a table. */
export class BloomFilter {
  private readonly bits: number;
  private readonly k: number;

  /** Wraps filter bytes (not copied). Throws RangeError when they cannot be a filter. */
  constructor(readonly data: Uint8Array) {
    if (data.length < 2) throw new RangeError(`bloom filter of ${data.length} bytes is too short`);
    this.bits = (data.length - 1) * 8;
    this.k = data[data.length - 1]!;
    if (this.k === 0) throw new RangeError("bloom filter with 0 probes");
  }

  /** Number of probes per key. */
  get probes(): number {
    return this.k;
  }

  /** False only if the key was certainly not added. */
  mayContain(key: Uint8Array): boolean {
    return this.mayContainHash(bloomHash(key));
  }

  /** mayContain for a key whose bloomHash is h. */
  mayContainHash(h: number): boolean {
    const k = this.k;
    if (k > BLOOM_MAX_PROBES) return true; // reserved for other encodings (as LevelDB)
    const data = this.data;
    const bits = this.bits;
    h >>>= 0;
    const delta = ((h >>> 17) | (h << 15)) >>> 0;
    for (let j = 0; j < k; j++) {
      const pos = bitIndex(h, bits);
      if ((data[pos >>> 3]! & (1 << (pos & 7))) === 0) return false;
      h = (h + delta) >>> 0;
    }
    return true;
  }
}
