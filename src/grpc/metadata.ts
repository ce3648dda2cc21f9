/**
 * gRPC metadata: the custom header fields of a call, keyed by lowercase name. Keys ending
 * in "-bin" hold bytes (sent base64-encoded, RFC 4648 without padding, and accepted with
 * or without it); other keys hold printable ASCII strings. Reserved fields (pseudo-headers,
 * content-type, te, grpc-* other than grpc-status-details-bin) are not metadata.
 */
export type MetadataValue = string | Buffer;

const KEY = /^[0-9a-z_.-]+$/;
const ASCII_VALUE = /^[\x20-\x7e]*$/;

export class Metadata {
  private readonly map = new Map<string, MetadataValue[]>();

  /** The values of `key` (empty when absent). */
  get(key: string): MetadataValue[] {
    return this.map.get(key.toLowerCase()) ?? [];
  }

  /** The first value of `key` when it is a string. */
  getString(key: string): string | undefined {
    const v = this.map.get(key.toLowerCase())?.[0];
    return typeof v === "string" ? v : undefined;
  }

  /** Replaces the values of `key`. Throws TypeError for an invalid key or value. */
  set(key: string, value: MetadataValue): this {
    const k = checkEntry(key, value);
    this.map.set(k, [value]);
    return this;
  }

  /** Adds a value to `key`. Throws TypeError for an invalid key or value. */
  add(key: string, value: MetadataValue): this {
    const k = checkEntry(key, value);
    const list = this.map.get(k);
    if (list === undefined) this.map.set(k, [value]);
    else list.push(value);
    return this;
  }

  /** [key, value] for every value, in insertion order. */
  *entries(): IterableIterator<[string, MetadataValue]> {
    for (const [k, list] of this.map) for (const v of list) yield [k, v];
  }

  get size(): number {
    return this.map.size;
  }

  /** The metadata of a request's regular header fields (alternating names and values). */
  static fromFields(fields: readonly string[]): Metadata {
    const md = new Metadata();
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i]!;
      if (isReserved(name)) continue;
      const raw = fields[i + 1]!;
      if (name.endsWith("-bin")) {
        // A comma-separated list of base64 values (RFC 9110 field lines combined).
        for (const part of raw.split(",")) md.addRaw(name, Buffer.from(part.trim(), "base64"));
      } else {
        md.addRaw(name, raw);
      }
    }
    return md;
  }

  /** Header fields for the wire: -bin values base64-encoded. */
  toFields(): [string, string][] {
    const out: [string, string][] = [];
    for (const [k, v] of this.entries()) {
      out.push([k, typeof v === "string" ? v : v.toString("base64").replace(/=+$/, "")]);
    }
    return out;
  }

  private addRaw(key: string, value: MetadataValue): void {
    const list = this.map.get(key);
    if (list === undefined) this.map.set(key, [value]);
    else list.push(value);
  }
}

/** Header fields that are gRPC's or HTTP/2's own, never metadata. */
export function isReserved(name: string): boolean {
  if (name.charCodeAt(0) === 0x3a) return true;
  if (name === "content-type" || name === "te") return true;
  return name.startsWith("grpc-") && name !== "grpc-status-details-bin";
}

function checkEntry(key: string, value: MetadataValue): string {
  const k = key.toLowerCase();
  if (!KEY.test(k) || isReserved(k))
    throw new TypeError(`invalid metadata key ${JSON.stringify(key)}`);
  const binary = k.endsWith("-bin");
  if (binary !== Buffer.isBuffer(value)) {
    throw new TypeError(
      `metadata ${k}: ${binary ? "a -bin key takes a Buffer" : "a Buffer needs a -bin key"}`,
    );
  }
  if (!binary && !ASCII_VALUE.test(value as string)) {
    throw new TypeError(`metadata ${k}: values must be printable ASCII`);
  }
  return k;
}
