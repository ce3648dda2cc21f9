import assert from "node:assert/strict";
import { test } from "node:test";
import {
  crc32c,
  crc32cExtend,
  crc32cTables,
  maskCrc,
  nativeCrc32cAvailable,
  unmaskCrc,
} from "../../src/util/crc32c.js";
import { rng } from "../support/random.js";

test("crc32c matches the standard check value and known vectors", () => {
  assert.equal(crc32c(Buffer.from("123456789")), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(new Uint8Array(0)), 0);
});

test("the native and table implementations agree on every length and offset", (t) => {
  t.diagnostic(`native implementation available: ${nativeCrc32cAvailable}`);
  const r = rng(7);
  const data = new Uint8Array(10000).map(() => Math.floor(r() * 256));
  for (const len of [0, 1, 7, 8, 9, 255, 256, 257, 1000, 4096, 9999]) {
    for (const start of [0, 1, 3]) {
      const end = Math.min(data.length, start + len);
      assert.equal(crc32c(data, start, end), crc32cTables(0, data, start, end), `${start}+${len}`);
    }
  }
});

test("extending a crc over two halves equals the crc of the whole", () => {
  const data = Buffer.from("the quick brown fox jumps over the lazy dog".repeat(20));
  for (const cut of [0, 5, 300, data.length]) {
    assert.equal(crc32cExtend(crc32c(data, 0, cut), data, cut), crc32c(data));
  }
});

test("masking is reversible and changes the value", () => {
  for (const v of [0, 1, 0xe3069283, 0xffffffff]) {
    assert.equal(unmaskCrc(maskCrc(v)), v);
    assert.notEqual(maskCrc(v), v);
  }
});
