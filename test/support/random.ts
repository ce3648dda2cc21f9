/** The seeded PRNG of the tests (src/util/random.ts), and the seed of a randomized test. */
export { randInt, rng } from "../../src/util/random.js";

/** The seed for a randomized test: KV_SEED from the environment, or a random one. */
export function testSeed(): number {
  const env = process.env["KV_SEED"];
  return env === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(env);
}
