/** classic-level 3 (LevelDB via N-API), through its promise API. Durable puts pass `sync`. */
import { ClassicLevel } from "classic-level";
import type { BenchStore, StoreAdapter } from "./store.js";

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
      keyEncoding: "view",
      valueEncoding: "view",
      createIfMissing: true,
    });
    await db.open();
    // LevelDB has no store-wide sync default: durability is chosen per put (the
    // scenarios pass `options.sync` on every put).
    void options;
    return {
      put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
      get: (key) => db.get(key),
      close: () => db.close(),
    };
  },
};
