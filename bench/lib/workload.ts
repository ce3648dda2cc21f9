/** Deterministic workloads: keys, their order, and values, identical for every store. */

/** Width of the decimal part of a key: `key_` + 12 digits = 16 bytes. */
const KEY_DIGITS = 12;
const encoder = new TextEncoder();

/** `key_%012d`, e.g. key(42) = "key_000000000042" (16 bytes). */
export function formatKey(i: number): string {
  return `key_${String(i).padStart(KEY_DIGITS, "0")}`;
}

/** mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Keys 0..n-1 encoded as bytes, in a random (seeded) order. Built before timing starts. */
export function shuffledKeys(n: number, seed: number): Uint8Array[] {
  const order = Array.from({ length: n }, (_, i) => i);
  const random = rng(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order.map((i) => encoder.encode(formatKey(i)));
}

/** Pseudo-random (incompressible) values of `size` bytes; value(i) is a view, not a copy. */
export function valueSource(size: number, seed: number): (i: number) => Uint8Array {
  const window = 4096;
  const pool = new Uint8Array(size + window);
  const random = rng(seed ^ 0x9e3779b9);
  for (let i = 0; i < pool.length; i++) pool[i] = Math.floor(random() * 256);
  return (i) => {
    const offset = i % window;
    return pool.subarray(offset, offset + size);
  };
}

/** True when both arrays hold the same bytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
