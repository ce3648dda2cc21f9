/**
 * The JSON form of the inspection dumps (src/tools/*-dump.ts): the dump objects as they
 * are, except that every byte string becomes a field chosen by the ByteFormat (`key` when
 * it is UTF-8 and --hex is off, else `keyHex`), and kinds are "PUT" / "DEL".
 */
import type { ManifestDump } from "../tools/manifest-dump.js";
import type { DumpEntry, DumpKey, TableSummary } from "../tools/sst-dump.js";
import type { WalDump, WalOp } from "../tools/wal-dump.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { ByteFormats } from "./command.js";

type Json = Record<string, unknown>;

/** "PUT", "DEL" or "KIND n". */
export function kindName(kind: number): string {
  return kind === 1 ? "PUT" : kind === 0 ? "DEL" : `KIND ${kind}`;
}

export function keyJson(fmt: ByteFormats, k: DumpKey): Json {
  const out: Json = {};
  fmt.key.json(out, "key", k.key);
  out.seq = k.seq;
  out.kind = kindName(k.kind);
  return out;
}

function boundJson(fmt: ByteFormats, key: Uint8Array, seq: number): Json {
  const out: Json = {};
  fmt.key.json(out, "key", key);
  out.seq = seq;
  return out;
}

export function fileJson(fmt: ByteFormats, f: FileMetadata): Json {
  return {
    number: f.number,
    size: f.size,
    entries: f.entries,
    tombstones: f.tombstones,
    smallest: boundJson(fmt, f.smallestKey, f.smallestSeq),
    largest: boundJson(fmt, f.largestKey, f.largestSeq),
  };
}

export function entryJson(fmt: ByteFormats, e: DumpEntry | WalOp): Json {
  const out = keyJson(fmt, e);
  if (e.kind !== 0) fmt.value.json(out, "value", e.value);
  if ("block" in e) out.block = e.block;
  return out;
}

export function tableJson(fmt: ByteFormats, s: TableSummary): Json {
  const p = s.properties;
  const properties: Json = { ...p };
  delete properties.smallestKey;
  delete properties.largestKey;
  fmt.key.json(properties, "smallestKey", p.smallestKey);
  fmt.key.json(properties, "largestKey", p.largestKey);
  return {
    ...s,
    properties,
    blocks: s.blocks.map((b) => ({
      ...b,
      indexKey: keyJson(fmt, b.indexKey),
      firstKey: b.firstKey === undefined ? undefined : keyJson(fmt, b.firstKey),
      lastKey: b.lastKey === undefined ? undefined : keyJson(fmt, b.lastKey),
    })),
  };
}

export function walJson(fmt: ByteFormats, d: WalDump): Json {
  return {
    ...d,
    records: d.records.map((r) => ({ ...r, ops: r.ops.map((op) => entryJson(fmt, op)) })),
  };
}

export function manifestJson(fmt: ByteFormats, d: ManifestDump): Json {
  return {
    ...d,
    edits: d.edits.map((e) => ({
      ...e,
      added: e.added.map((a) => ({ level: a.level, ...fileJson(fmt, a.file) })),
    })),
    final: {
      ...d.final,
      levels: d.final.levels.map((files) => files.map((f) => fileJson(fmt, f))),
    },
  };
}
