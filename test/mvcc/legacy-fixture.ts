/** A pre-MVCC store for the upgrade tests, and a dump of a whole store. */
import { type KvStore, type MemoryFileSystem, open } from "../../src/index.js";
import { rng } from "../support/random.js";
import { KEYS, randomValue } from "./mvcc-harness.js";

export const APPLIED = Uint8Array.from(Buffer.from("\0applied", "latin1"));
export const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** A pre-MVCC store: `KEYS` (and more) under 0x01 with seeded values, and an applied key. */
export async function legacyStore(
  fs: MemoryFileSystem,
  seed: number,
): Promise<Map<string, Uint8Array>> {
  const r = rng(seed);
  const db = await open("/db", { fs, writeBufferSize: 4096 });
  const content = new Map<string, Uint8Array>();
  const b = db.batch();
  const keys = [...KEYS, ...Array.from({ length: 60 }, (_, i) => Buffer.from(`k${i}`))];
  for (const k of keys) {
    const v = randomValue(r);
    content.set(hex(k), v);
    b.put(Uint8Array.from([1, ...k]), v);
  }
  b.put(APPLIED, new Uint8Array(16));
  await db.write(b);
  await db.close();
  return content;
}

/** Every entry of the store, as text. */
export async function dump(db: KvStore): Promise<string[]> {
  return (await db.iterator().all()).map(([k, v]) => `${hex(k)}=${hex(v)}`);
}
