/** Shared helpers of the version tests: file metadata, directories, state descriptions. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import type { VersionSet } from "../../src/version/version-set.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

const enc = new TextEncoder();

export function bytes(s: string): Uint8Array {
  return enc.encode(s);
}

/** File `number` holding user keys smallest..largest, with the given bound sequences. */
export function meta(
  number: number,
  smallest: string,
  largest: string,
  options: { smallestSeq?: number; largestSeq?: number; size?: number } = {},
): FileMetadata {
  return {
    number,
    size: options.size ?? 1000 + number,
    smallestKey: bytes(smallest),
    smallestSeq: options.smallestSeq ?? 10,
    largestKey: bytes(largest),
    largestSeq: options.largestSeq ?? 5,
    entries: 100,
    tombstones: 3,
  };
}

export const DIR = "/db";

/** A memory file system holding the (durable) empty directory /db. */
export async function memoryDir(): Promise<MemoryFileSystem> {
  const mem = new MemoryFileSystem();
  await mem.mkdir(DIR);
  await mem.syncDir("/");
  return mem;
}

/** Everything a version set recovers: the files per level and the counters. */
export function describeSet(vs: VersionSet): string {
  return `${vs.current.toString()}\nlogNumber ${vs.logNumber}, lastSequence ${vs.lastSequence}`;
}

/** File numbers per level, e.g. [[5, 3], [1], [], ...]. */
export function numbersByLevel(vs: VersionSet): number[][] {
  return vs.current.levels.map((files) => files.map((f) => f.number));
}

export function hex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}

/** The hex bytes of the code block after `<!-- marker -->` in docs/format/manifest.md. */
export function docExample(marker: string): string {
  const doc = readFileSync(new URL("../../../docs/format/manifest.md", import.meta.url), "utf8");
  const block = new RegExp(`<!-- ${marker} -->\\s*\`\`\`\\n([\\s\\S]*?)\`\`\``).exec(doc);
  assert.ok(block, `docs/format/manifest.md has a ${marker} block`);
  return block[1]!
    .split("\n")
    .map((line) => /^((?:[0-9a-f]{2} )*[0-9a-f]{2})(?:\s|$)/.exec(line)?.[1] ?? "")
    .join("")
    .replace(/\s+/g, "");
}
