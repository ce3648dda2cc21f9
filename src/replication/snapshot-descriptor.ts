/**
 * A snapshot's descriptor: the Raft snapshot's `data` (docs/format/replicated-store.md,
 * "Snapshots"). JSON: `{ "format": 1, "index", "term", "files": [{ "name", "size",
 * "crc32c" }] }`, the files of the store checkpoint in the order they are sent. It is
 * repeated in every header of the Raft log (docs/format/raft-log.md), so it names files,
 * never holds data. A local snapshot directory keeps it as the file SNAPSHOT.
 */
import { KvError } from "../errors.js";
import type { SnapshotFileInfo } from "./peer-transport.js";

export const DESCRIPTOR_FILE = "SNAPSHOT";
const FORMAT = 1;
const FILE_NAME = /^[A-Za-z0-9._-]{1,128}$/;

export interface SnapshotDescriptor {
  readonly index: number;
  readonly term: number;
  readonly files: readonly SnapshotFileInfo[];
}

export function encodeDescriptor(d: SnapshotDescriptor): Uint8Array {
  return Buffer.from(
    JSON.stringify({ format: FORMAT, index: d.index, term: d.term, files: d.files }),
  );
}

function nonNegative(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Decodes and checks a descriptor (a peer's, so every field is checked: file names are
 * plain names that cannot leave the directory). Throws KvError CORRUPTION.
 */
export function decodeDescriptor(bytes: Uint8Array): SnapshotDescriptor {
  let o: { format?: unknown; index?: unknown; term?: unknown; files?: unknown };
  try {
    o = JSON.parse(Buffer.from(bytes).toString("utf8")) as typeof o;
  } catch (err) {
    throw new KvError("CORRUPTION", "snapshot descriptor is not JSON", { cause: err });
  }
  if (typeof o !== "object" || o === null || o.format !== FORMAT) {
    throw new KvError("CORRUPTION", "snapshot descriptor has an unknown format");
  }
  if (!nonNegative(o.index) || !nonNegative(o.term) || !Array.isArray(o.files)) {
    throw new KvError("CORRUPTION", "snapshot descriptor lacks index, term or files");
  }
  const seen = new Set<string>();
  const files = o.files.map((f: unknown): SnapshotFileInfo => {
    const x = f as { name?: unknown; size?: unknown; crc32c?: unknown };
    if (
      typeof x !== "object" ||
      x === null ||
      typeof x.name !== "string" ||
      !FILE_NAME.test(x.name) ||
      x.name === "." ||
      x.name === ".." ||
      x.name === DESCRIPTOR_FILE ||
      x.name === "LOCK" ||
      seen.has(x.name) ||
      !nonNegative(x.size) ||
      !nonNegative(x.crc32c) ||
      x.crc32c > 0xffffffff
    ) {
      throw new KvError("CORRUPTION", `snapshot descriptor names a bad file ${JSON.stringify(f)}`);
    }
    seen.add(x.name);
    return { name: x.name, size: x.size, crc32c: x.crc32c };
  });
  return { index: o.index, term: o.term, files };
}
