/**
 * The core's only source of randomness: a seeded generator (mulberry32), so that a node
 * built with the same seed makes the same choices (the randomized election timeout) and
 * every run replays exactly. Not for cryptography.
 */
export class SeededRandom {
  private state: number;

  /** `stream` (the node's ID) is mixed in, so that nodes given one seed still draw differently. */
  constructor(seed: number, stream = 0) {
    this.state = (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(stream >>> 0, 0x85ebca6b)) >>> 0;
  }

  /** A uniformly distributed integer in [0, n) (n a positive integer below 2^32). */
  intBelow(n: number): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return Math.floor(u * n);
  }
}
