/**
 * The text form of the inspection dumps (src/tools/*-dump.ts), for people: one fact per
 * line, byte strings through the ByteFormat (escaped text, or hex), internal keys as
 * `key#seq`, sizes in exact bytes. Entry and operation lines are tab-separated
 * (`seq<TAB>PUT<TAB>key<TAB>value`); escaping guarantees no raw tab or newline inside a
 * field. Each function returns lines without newlines.
 */
import type { ManifestDump } from "../tools/manifest-dump.js";
import type { DumpEntry, DumpKey, TableSummary } from "../tools/sst-dump.js";
import type { WalDump, WalOp } from "../tools/wal-dump.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { ByteFormats } from "./command.js";
import { kindName } from "./dump-json.js";

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

export function keyText(fmt: ByteFormats, k: DumpKey): string {
  return `${fmt.key.show(k.key)}#${k.seq}`;
}

/** `seq<TAB>KIND<TAB>key<TAB>value` (no value field for a delete). */
export function opText(fmt: ByteFormats, e: DumpEntry | WalOp): string {
  const head = `${e.seq}\t${kindName(e.kind)}\t${fmt.key.show(e.key)}`;
  return e.kind === 0 ? head : `${head}\t${fmt.value.show(e.value)}`;
}

function fileText(fmt: ByteFormats, f: FileMetadata): string {
  return (
    `table ${f.number}, ${f.size} bytes, ${plural(f.entries, "entry", "entries")} ` +
    `(${plural(f.tombstones, "tombstone")}), ${fmt.key.show(f.smallestKey)}#${f.smallestSeq} .. ` +
    `${fmt.key.show(f.largestKey)}#${f.largestSeq}`
  );
}

export function tableText(fmt: ByteFormats, s: TableSummary): string[] {
  const p = s.properties;
  const f = s.footer;
  const lines = [
    `file: ${s.path} (${s.fileSize} bytes${s.fileNumber === undefined ? "" : `, table ${s.fileNumber}`})`,
    `format version ${f.formatVersion}; compression option ${p.compression}; ` +
      `${plural(p.dataBlocks, "data block")} (${p.compressedDataBlocks} compressed)`,
    `entries: ${p.entries} (${plural(p.tombstones, "tombstone")}), ${s.distinctKeys} distinct keys`,
    `keys: ${fmt.key.show(p.smallestKey)}#${p.smallestKeySeq} .. ${fmt.key.show(p.largestKey)}#${p.largestKeySeq}`,
    `sequence numbers: ${p.smallestSeq} .. ${p.largestSeq}`,
    `raw sizes: keys ${p.rawKeyBytes} bytes, values ${p.rawValueBytes} bytes`,
    `footer: index block at ${f.index.offset} (${f.index.size} bytes), ` +
      (f.filter === undefined
        ? "no filter block, "
        : `filter block at ${f.filter.offset} (${f.filter.size} bytes), `) +
      `properties block at ${f.properties.offset} (${f.properties.size} bytes)`,
  ];
  const b = s.filter;
  lines.push(
    b === undefined
      ? "filter: none"
      : `filter: Bloom, ${b.bits} bits, ${b.probes} probes` +
          (b.bitsPerKey === undefined || b.falsePositiveRate === undefined
            ? ""
            : `, ${b.bitsPerKey.toFixed(1)} bits per key, ~${(100 * b.falsePositiveRate).toFixed(2)}% false positives`),
  );
  lines.push(`index: ${plural(s.blocks.length, "data block")}`);
  for (const block of s.blocks) {
    const where = `  block ${block.index}: offset ${block.offset}, ${block.size} bytes, ${block.compression}`;
    lines.push(
      block.problem !== undefined
        ? `${where}, DAMAGED: ${block.problem}`
        : `${where}, ${plural(block.entries ?? 0, "entry", "entries")}, ` +
            `${block.firstKey === undefined ? "-" : keyText(fmt, block.firstKey)} .. ` +
            `${block.lastKey === undefined ? "-" : keyText(fmt, block.lastKey)} ` +
            `(index key ${keyText(fmt, block.indexKey)})`,
    );
  }
  return lines;
}

export function walText(fmt: ByteFormats, d: WalDump): string[] {
  const zeros = d.zeroTailBytes > 0 ? `; ${d.zeroTailBytes} of them zeros after the log's end` : "";
  const lines = [`file: ${d.path} (${d.fileSize} bytes${zeros})`];
  let ops = 0;
  let first: number | undefined;
  let last: number | undefined;
  d.records.forEach((r, i) => {
    const batch =
      r.problem !== undefined
        ? `MALFORMED BATCH: ${r.problem}`
        : `sequence ${r.sequence}, ${plural(r.count ?? 0, "op")}`;
    lines.push(`record ${i} at offset ${r.offset} (${r.length} bytes): ${batch}`);
    for (const op of r.ops) {
      lines.push(`  ${opText(fmt, op)}`);
      first ??= op.seq;
      last = op.seq;
      ops++;
    }
  });
  lines.push(
    `records: ${d.records.length} with ${plural(ops, "op")}` +
      (first === undefined ? "" : ` (sequence numbers ${first} .. ${last})`),
  );
  for (const x of d.damage) {
    const what =
      x.kind === "torn-tail"
        ? "torn tail (the unsynced end of the log: what a crash leaves)"
        : "corruption (the log continued past it)";
    lines.push(`damage at offset ${x.offset}, ${x.bytes} bytes: ${what}: ${x.reason}`);
  }
  lines.push(
    d.firstDamageOffset === undefined
      ? "no damage"
      : `damage starts at offset ${d.firstDamageOffset}; good records end at ${d.goodEndOffset}`,
  );
  return lines;
}

export function manifestText(fmt: ByteFormats, d: ManifestDump): string[] {
  const lines = [
    `manifest: ${d.path}${d.current === undefined ? "" : " (named by CURRENT)"}, ` +
      `${d.fileSize} bytes, ${plural(d.edits.length, "edit")}`,
  ];
  d.edits.forEach((e, i) => {
    const facts: string[] = [];
    if (e.formatVersion !== undefined) {
      facts.push(`snapshot (format ${e.formatVersion}, comparator ${e.comparator ?? "-"})`);
    }
    if (e.logNumber !== undefined) facts.push(`log number ${e.logNumber}`);
    if (e.nextFileNumber !== undefined) facts.push(`next file ${e.nextFileNumber}`);
    if (e.lastSequence !== undefined) facts.push(`last sequence ${e.lastSequence}`);
    lines.push(
      `edit ${i} at offset ${e.offset} (${e.length} bytes): ${facts.join(", ") || "files only"}`,
    );
    for (const x of e.deleted) lines.push(`  - level ${x.level}: table ${x.number}`);
    for (const a of e.added) lines.push(`  + level ${a.level}: ${fileText(fmt, a.file)}`);
    if (e.problem !== undefined) lines.push(`  PROBLEM: ${e.problem}`);
  });
  for (const x of d.damage) {
    lines.push(`damage at offset ${x.offset}, ${x.bytes} bytes (${x.kind}): ${x.reason}`);
  }
  const v = d.final;
  lines.push(
    `final version${v.complete ? "" : " (INCOMPLETE: edits after a bad one not applied)"}: ` +
      `log number ${v.logNumber ?? "-"}, next file ${v.nextFileNumber ?? "-"}, ` +
      `last sequence ${v.lastSequence ?? "-"}`,
  );
  v.levels.forEach((files, level) => {
    const bytes = files.reduce((sum, f) => sum + f.size, 0);
    lines.push(`  level ${level}: ${plural(files.length, "file")}, ${bytes} bytes`);
    for (const f of files) lines.push(`    ${fileText(fmt, f)}`);
  });
  return lines;
}
