/**
 * The static Huffman code of HPACK (RFC 7541, section 5.2 and Appendix B), decoding only:
 * the server writes its own header blocks with raw literals (hpack-encoder.ts).
 *
 * The code is canonical: sorted by (length, symbol), each code is the previous one plus
 * one, shifted left by the growth in length. So the table below holds only the code length
 * of each symbol (Appendix B's "len" column; symbols 0-255 are octets, 256 is EOS) and the
 * codes are derived from it. The decoder is a state machine reading four bits at a time:
 * a state is an internal node of the code tree, and each (state, nibble) pair says which
 * state follows, which octet (if any) was completed on the way, and whether the bits read
 * since the last octet are a valid padding (a prefix of EOS, all ones, at most 7 bits).
 */

/** Code length in bits of each symbol, 0-255 then EOS (RFC 7541 Appendix B). */
const CODE_LENGTHS: readonly number[] = [
  13,
  23,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  24,
  30,
  28,
  28,
  30,
  28,
  28, // 0-15
  28,
  28,
  28,
  28,
  28,
  28,
  30,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28,
  28, // 16-31
  6,
  10,
  10,
  12,
  13,
  6,
  8,
  11,
  10,
  10,
  8,
  11,
  8,
  6,
  6,
  6, // 32-47
  5,
  5,
  5,
  6,
  6,
  6,
  6,
  6,
  6,
  6,
  7,
  8,
  15,
  6,
  12,
  10, // 48-63
  13,
  6,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7, // 64-79
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  7,
  8,
  7,
  8,
  13,
  19,
  13,
  14,
  6, // 80-95
  15,
  5,
  6,
  5,
  6,
  5,
  6,
  6,
  6,
  5,
  7,
  7,
  6,
  6,
  6,
  5, // 96-111
  6,
  7,
  6,
  5,
  5,
  6,
  7,
  7,
  7,
  7,
  7,
  15,
  11,
  14,
  13,
  28, // 112-127
  20,
  22,
  20,
  20,
  22,
  22,
  22,
  23,
  22,
  23,
  23,
  23,
  23,
  23,
  24,
  23, // 128-143
  24,
  24,
  22,
  23,
  24,
  23,
  23,
  23,
  23,
  21,
  22,
  23,
  22,
  23,
  23,
  24, // 144-159
  22,
  21,
  20,
  22,
  22,
  23,
  23,
  21,
  23,
  22,
  22,
  24,
  21,
  22,
  23,
  23, // 160-175
  21,
  21,
  22,
  21,
  23,
  22,
  23,
  23,
  20,
  22,
  22,
  22,
  23,
  22,
  22,
  23, // 176-191
  26,
  26,
  20,
  19,
  22,
  23,
  22,
  25,
  26,
  26,
  26,
  27,
  27,
  26,
  24,
  25, // 192-207
  19,
  21,
  26,
  27,
  27,
  26,
  27,
  24,
  21,
  21,
  26,
  26,
  28,
  27,
  27,
  27, // 208-223
  20,
  24,
  20,
  21,
  22,
  21,
  21,
  23,
  22,
  22,
  25,
  25,
  24,
  24,
  26,
  23, // 224-239
  26,
  27,
  26,
  26,
  27,
  27,
  27,
  27,
  27,
  28,
  27,
  27,
  27,
  27,
  27,
  26, // 240-255
  30, // EOS (256)
];

const EOS = 256;

/** The code of each symbol (right-aligned), from the canonical assignment. */
function canonicalCodes(): number[] {
  const order = CODE_LENGTHS.map((_, s) => s).sort(
    (a, b) => CODE_LENGTHS[a]! - CODE_LENGTHS[b]! || a - b,
  );
  const codes = new Array<number>(CODE_LENGTHS.length).fill(0);
  let code = 0;
  let previous = CODE_LENGTHS[order[0]!]!;
  order.forEach((symbol, i) => {
    const length = CODE_LENGTHS[symbol]!;
    if (i > 0) code = (code + 1) * 2 ** (length - previous);
    previous = length;
    codes[symbol] = code;
  });
  return codes;
}

/** The code of each symbol, right-aligned in `length(symbol)` bits (exported for tests). */
export const HUFFMAN_CODES: readonly number[] = canonicalCodes();

/** Code length of each symbol (exported for tests and for encoders). */
export const HUFFMAN_CODE_LENGTHS: readonly number[] = CODE_LENGTHS;

// Transition table: entry (state * 16 + nibble) packs next state (bits 0-7), emitted octet
// (bits 8-15), EMITS (bit 16), ACCEPTS (bit 17: what was read since the last octet may end
// the string), FAILS (bit 18: the bits lead to EOS or outside the code).
const EMITS = 1 << 16;
const ACCEPTS = 1 << 17;
const FAILS = 1 << 18;

function buildTransitions(): Uint32Array {
  // Code tree: node 0 is the root; children[2n], children[2n+1] are the 0 and 1 child
  // (-1 - symbol for a leaf, 0 for none).
  const children: number[] = [0, 0];
  let nodes = 1;
  HUFFMAN_CODES.forEach((code, symbol) => {
    const length = CODE_LENGTHS[symbol]!;
    let node = 0;
    for (let bit = length - 1; bit >= 0; bit--) {
      const b = Math.floor(code / 2 ** bit) % 2;
      const slot = node * 2 + b;
      if (bit === 0) {
        children[slot] = -1 - symbol;
      } else {
        if (children[slot] === 0) {
          children.push(0, 0);
          children[slot] = nodes++;
        }
        node = children[slot]!;
      }
    }
  });
  // A node is a valid padding position iff its path from the root is all ones and at
  // most 7 bits long (depth counted along the all-ones spine).
  const paddingOk = new Set<number>([0]);
  for (let node = 0, depth = 0; depth < 7; depth++) {
    const next = children[node * 2 + 1]!;
    if (next <= 0) break;
    paddingOk.add(next);
    node = next;
  }
  if (nodes > 256) throw new Error("hpack-huffman: more than 256 internal nodes");
  const table = new Uint32Array(nodes * 16);
  for (let state = 0; state < nodes; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const child = children[node * 2 + ((nibble >> bit) & 1)]!;
        if (child === 0 || child === -1 - EOS) {
          entry = FAILS;
          break;
        }
        if (child < 0) {
          // Codes are at least 5 bits long: at most one octet per nibble.
          entry |= EMITS | ((-1 - child) << 8);
          node = 0;
        } else {
          node = child;
        }
      }
      if ((entry & FAILS) === 0) {
        entry |= node;
        // The bits read since the last octet are the path to `node`: padding iff all ones
        // and fewer than 8.
        if (paddingOk.has(node)) entry |= ACCEPTS;
      }
      table[state * 16 + nibble] = entry;
    }
  }
  return table;
}

const TRANSITIONS = buildTransitions();

/**
 * Decodes the Huffman-coded octets `src[start, end)` into a latin1 string (one char per
 * octet). Returns undefined when the input is not a valid encoding (it contains EOS, ends
 * inside a code, or its padding is longer than 7 bits or not all ones).
 */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string | undefined {
  let state = 0;
  let accepts = true;
  let out = "";
  let pending: number[] | undefined;
  for (let i = start; i < end; i++) {
    const octet = src[i]!;
    for (let shift = 4; shift >= 0; shift -= 4) {
      const entry = TRANSITIONS[state * 16 + ((octet >> shift) & 0xf)]!;
      if ((entry & FAILS) !== 0) return undefined;
      if ((entry & EMITS) !== 0) {
        pending ??= [];
        pending.push((entry >> 8) & 0xff);
        if (pending.length === 512) {
          out += String.fromCharCode(...pending);
          pending.length = 0;
        }
      }
      state = entry & 0xff;
      accepts = (entry & ACCEPTS) !== 0;
    }
  }
  if (!accepts) return undefined;
  return pending === undefined ? out : out + String.fromCharCode(...pending);
}
