/** The CLI never writes raw bytes to a terminal: escaping, hex and JSON field choice. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { byteFormat, escapeBytes, fromHex, toHex } from "../../src/cli/byte-format.js";

test("escapeBytes keeps printable text and escapes everything else", () => {
  assert.equal(escapeBytes(Buffer.from("plain text é ✓")), "plain text é ✓");
  assert.equal(escapeBytes(Buffer.from("a\tb\nc\rd\\e")), "a\\tb\\nc\\rd\\\\e");
  assert.equal(escapeBytes(Buffer.from("\x1b[31mred\x00")), "\\x1b[31mred\\x00");
  assert.equal(escapeBytes(Buffer.from("a\u202eb")), "a\\u{202e}b", "bidi override escaped");
  assert.equal(escapeBytes(Buffer.from([0xff, 0x41, 0x5c, 0x0a])), "\\xffA\\\\\\n");
  assert.equal(escapeBytes(new Uint8Array(0)), "");
  for (const bytes of [Buffer.from([0, 1, 2, 0x7f, 0x80, 0xff]), Buffer.from("x\ny")]) {
    const codes = [...escapeBytes(bytes)].map((c) => c.charCodeAt(0));
    assert.ok(codes.every((c) => c >= 0x20 && c !== 0x7f && (c < 0x80 || c > 0x9f)));
  }
});

test("hex round-trips and rejects malformed input", () => {
  const bytes = Buffer.from([0x00, 0xab, 0xff]);
  assert.equal(toHex(bytes), "00abff");
  assert.deepEqual(fromHex("00ABff", "KEY"), bytes);
  assert.throws(() => fromHex("abc", "KEY"), /KEY is not hex/);
  assert.throws(() => fromHex("zz", "KEY"), /KEY is not hex/);
});

test("JSON fields hold text when the bytes are UTF-8, hex otherwise or with --hex", () => {
  const out: Record<string, unknown> = {};
  byteFormat(false).json(out, "key", Buffer.from("k\n"));
  byteFormat(false).json(out, "value", Buffer.from([0xff]));
  assert.deepEqual(out, { key: "k\n", valueHex: "ff" });
  const hexOut: Record<string, unknown> = {};
  byteFormat(true).json(hexOut, "key", Buffer.from("k"));
  assert.deepEqual(hexOut, { keyHex: "6b" });
  assert.deepEqual(byteFormat(true).parse("6b00", "KEY"), Buffer.from([0x6b, 0]));
  assert.deepEqual(byteFormat(false).parse("é", "KEY"), Buffer.from("é"));
});
