/** Deterministic workloads: keys, their order, and values, identical for every store. */
import { rng } from "../../src/util/random.js";

/** Width of the decimal part of a key: `key_` + 12 digits = 16 bytes. */
const KEY_DIGITS = 12;
const encoder = new TextEncoder();

/** `key_%012d`, e.g. key(42) = "key_000000000042" (16 bytes). */
export function formatKey(i: number): string {
  return `key_${String(i).padStart(KEY_DIGITS, "0")}`;
}

/** The project's seeded PRNG (src/util/random.ts): the scenarios take it from here. */
export { rng };

/** 0..n-1 in a random (seeded) order (Fisher-Yates). */
export function shuffledIndices(n: number, seed: number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const random = rng(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}

/** Keys 0..n-1 encoded as bytes, in a random (seeded) order. Built before timing starts. */
export function shuffledKeys(n: number, seed: number): Uint8Array[] {
  return Array.from(shuffledIndices(n, seed), (i) => encoder.encode(formatKey(i)));
}

/** Byte length of a key: `key_` + KEY_DIGITS digits. */
export const KEY_BYTES = 4 + KEY_DIGITS;

/**
 * Keys `first .. first+count-1` (`key_%012d`) packed into one buffer, KEY_BYTES apart:
 * large key sets cost one allocation, not one object per key. `keyAt` takes views.
 */
export function keyTable(first: number, count: number): Uint8Array {
  const table = new Uint8Array(count * KEY_BYTES);
  const prefix = encoder.encode("key_");
  for (let i = 0; i < count; i++) {
    const at = i * KEY_BYTES;
    table.set(prefix, at);
    let v = first + i;
    for (let d = KEY_BYTES - 1; d >= prefix.length; d--) {
      table[at + d] = 0x30 + (v % 10);
      v = Math.floor(v / 10);
    }
  }
  return table;
}

/** The i-th key of a `keyTable` (a view, no copy). */
export function keyAt(table: Uint8Array, i: number): Uint8Array {
  return table.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES);
}

/** Bytes of the random pool values are cut from: far more than a table block holds. */
const VALUE_POOL_BYTES = 1 << 20;

/**
 * Pseudo-random (incompressible) values of `size` bytes; value(i) is a view, not a copy.
 * Consecutive i get consecutive, disjoint slices of a 1 MiB random pool (as db_bench
 * does), so the values of neighbouring keys share no bytes either: a block of a table
 * filled in key order does not compress.
 */
export function valueSource(size: number, seed: number): (i: number) => Uint8Array {
  const pool = new Uint8Array(size + VALUE_POOL_BYTES);
  const random = rng(seed ^ 0x9e3779b9);
  for (let i = 0; i < pool.length; i++) pool[i] = Math.floor(random() * 256);
  return (i) => {
    const offset = (i * size) % VALUE_POOL_BYTES;
    return pool.subarray(offset, offset + size);
  };
}

/** True when both arrays hold the same bytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** YCSB's Zipfian constant: item i (from 0) is drawn with probability ∝ 1 / (i+1)^θ. */
export const ZIPF_THETA = 0.99;

/**
 * `count` draws from 0..n-1 with a Zipfian distribution (YCSB's ZipfianGenerator, Gray et
 * al.'s method, θ = ZIPF_THETA), seeded; each rank scattered over 0..n-1 by a hash (as
 * YCSB's ScrambledZipfianGenerator does), so the hot keys are not neighbours.
 */
export function zipfianIndices(n: number, count: number, seed: number): Uint32Array {
  const theta = ZIPF_THETA;
  let zetan = 0;
  for (let i = 1; i <= n; i++) zetan += 1 / i ** theta;
  const zeta2 = 1 + 0.5 ** theta;
  const alpha = 1 / (1 - theta);
  const eta = (1 - (2 / n) ** (1 - theta)) / (1 - zeta2 / zetan);
  const random = rng(seed);
  const out = new Uint32Array(count);
  for (let j = 0; j < count; j++) {
    const u = random();
    const uz = u * zetan;
    const rank =
      uz < 1 ? 0 : uz < zeta2 ? 1 : Math.min(n - 1, Math.floor(n * (eta * u - eta + 1) ** alpha));
    out[j] = scramble(rank) % n;
  }
  return out;
}

/** murmur3's 32-bit finalizer: a bijection on 32-bit integers. */
function scramble(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const CITIES = ["Lisbon", "Osaka", "Recife", "Tartu", "Quito", "Perth", "Accra", "Bergen"];
const PLANS = ["free", "team", "business", "enterprise"];
/** Distinct values of `textValueSource`: more than a table block holds, cycled over i. */
const TEXT_POOL_VALUES = 1 << 16;

/**
 * JSON-like text values of `size` bytes (a user record with random ids, numbers and
 * picks from small vocabularies, cut or padded with spaces to `size`): values that
 * compress as application records do (deflate to ~1/3, LZ4 to ~1/2 per 4 KiB block).
 * Consecutive i get different records; value(i) is a view, not a copy.
 */
export function textValueSource(size: number, seed: number): (i: number) => Uint8Array {
  const random = rng(seed ^ 0x5bd1e995);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const pool = new Uint8Array(size * TEXT_POOL_VALUES).fill(0x20);
  for (let v = 0; v < TEXT_POOL_VALUES; v++) {
    const id = Math.floor(random() * 1e9);
    const record =
      `{"id":${id},"name":"user ${id % 100000}","email":"u${id}@example.com",` +
      `"city":"${pick(CITIES)}","plan":"${pick(PLANS)}","score":${Math.floor(random() * 1000)},` +
      `"active":${random() < 0.7},"tags":["${pick(PLANS)}","${pick(CITIES)}"]}`;
    encoder.encodeInto(record.slice(0, size), pool.subarray(v * size, (v + 1) * size));
  }
  return (i) => {
    const at = (i % TEXT_POOL_VALUES) * size;
    return pool.subarray(at, at + size);
  };
}
