/**
 * How the CLI shows and reads bytes. Keys and values may be any bytes, so nothing is
 * written to the terminal raw:
 * - text (default): valid UTF-8 is shown as text with control, format and unassigned
 *   characters and backslashes escaped (\n, \t, \r, \\, \xNN, \u{NNNN}); other bytes as
 *   printable ASCII with \xNN escapes. A line never holds a raw tab or newline.
 * - hex: lowercase hex, two digits per byte.
 * - JSON: a field holds the text when the bytes are valid UTF-8 and `hex` is off; otherwise
 *   the field is named with a `Hex` suffix and holds hex (`{"key":"a","valueHex":"ff"}`).
 *
 * Text arguments are UTF-8. An argument holding U+FFFD is refused: that is what Node makes
 * of bytes the shell passed that are not UTF-8, so the bytes meant are already lost; the
 * error names the hex option to pass them with.
 */

const utf8 = new TextDecoder("utf-8", { fatal: true });
const UNSAFE = /[\p{C}\\]/gu;

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function escapeChar(ch: string): string {
  switch (ch) {
    case "\\":
      return "\\\\";
    case "\n":
      return "\\n";
    case "\t":
      return "\\t";
    case "\r":
      return "\\r";
  }
  const cp = ch.codePointAt(0)!;
  return cp < 0x100
    ? `\\x${cp.toString(16).padStart(2, "0")}`
    : `\\u{${cp.toString(16).padStart(4, "0")}}`;
}

/** `bytes` as one line of safe text (see above). */
export function escapeBytes(bytes: Uint8Array): string {
  const text = decodeUtf8(bytes);
  if (text !== undefined) return text.replace(UNSAFE, escapeChar);
  let out = "";
  for (const byte of bytes) {
    if (byte === 0x5c) out += "\\\\";
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += escapeChar(String.fromCharCode(byte));
  }
  return out;
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Parses hex (any case, even length); throws an Error naming `what` otherwise. */
export function fromHex(text: string, what: string): Buffer {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) {
    throw new Error(`${what} is not hex (two digits per byte): '${text}'`);
  }
  return Buffer.from(text, "hex");
}

/** The replacement character: what argv holds where the shell passed bytes that are not UTF-8. */
const REPLACEMENT = "\uFFFD";

/** Bytes of a text argument (UTF-8); throws an Error naming `what` and `hexOption` if it holds U+FFFD. */
export function fromText(text: string, what: string, hexOption: string): Buffer {
  if (text.includes(REPLACEMENT)) {
    throw new Error(
      `${what} holds U+FFFD, the replacement character: the shell passed bytes that are not ` +
        `UTF-8, which cannot be told apart any more; pass the bytes as hex with ${hexOption} ` +
        `(two digits per byte, e.g. ${hexOption} 61ff)`,
    );
  }
  return Buffer.from(text, "utf8");
}

export interface ByteFormat {
  /** Bytes from a command-line argument. */
  parse(arg: string, what: string): Buffer;
  /** Bytes as text for a terminal line. */
  show(bytes: Uint8Array): string;
  /** Adds `name` (or `nameHex`) holding `bytes` to a JSON object. */
  json(out: Record<string, unknown>, name: string, bytes: Uint8Array): void;
}

/**
 * The format selected by a hex option (arguments and output in hex) or not (text);
 * `hexOption` is the option named in errors (default --hex).
 */
export function byteFormat(hex: boolean, hexOption = "--hex"): ByteFormat {
  return {
    parse: (arg, what) => (hex ? fromHex(arg, what) : fromText(arg, what, hexOption)),
    show: (bytes) => (hex ? toHex(bytes) : escapeBytes(bytes)),
    json: (out, name, bytes) => {
      const text = hex ? undefined : decodeUtf8(bytes);
      if (text !== undefined) out[name] = text;
      else out[`${name}Hex`] = toHex(bytes);
    },
  };
}
