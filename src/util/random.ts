/**
 * The project's one seeded PRNG (mulberry32), shared by the in-memory file system's crash
 * clones, the tests (test/support/random.ts) and the benchmarks, so that every randomized
 * run replays from its seed. Not for anything that needs unpredictability.
 */

/** A generator of floats in [0, 1): the same seed gives the same sequence. */
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

/** An integer in [0, n) from `r`. */
export function randInt(r: () => number, n: number): number {
  return Math.floor(r() * n);
}
