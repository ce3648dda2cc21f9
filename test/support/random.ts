/** mulberry32: a small seeded PRNG, so every randomized test replays from its seed. */
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

/** An integer in [0, n). */
export function randInt(r: () => number, n: number): number {
  return Math.floor(r() * n);
}

/** The seed for a randomized test: KV_SEED from the environment, or a random one. */
export function testSeed(): number {
  const env = process.env["KV_SEED"];
  return env === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(env);
}
