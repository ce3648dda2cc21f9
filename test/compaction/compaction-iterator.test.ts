/**
 * The keep/drop rules of compaction (src/compaction/compaction-iterator.ts), data-driven:
 * each file in test/compaction/testdata/ holds cases of input entries (internal keys in
 * their text form, `apple#12,PUT = value` or `apple#9,DEL`, any order), the live snapshots
 * and the key ranges of the levels below the output, and the entries a compaction keeps.
 * KV_REWRITE=1 rewrites the expected outputs (review the diff).
 *
 *     compact [snapshots=3,7] [deeper=a-c,k-k;x-z] [steps]
 *
 * `deeper`: one `;`-separated group of sorted ranges per deeper level. Output: the kept
 * entries, then `in N, kept K, dropped versions V, dropped tombstones T`. With `steps`,
 * every step instead (`key k` at each input user key, `skip`, `yield`), which shows where
 * an output may be cut.
 */
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  CompactionIterator,
  type KeyRange,
  STEP_END,
  STEP_ENTRY,
  STEP_SKIP,
  STEP_USER_KEY,
  STEP_YIELD,
} from "../../src/compaction/compaction-iterator.js";
import { formatInternalKey, KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { Memtable } from "../../src/memtable/memtable.js";
import { bytes, text } from "../support/bytes.js";
import { type DataDrivenCase, runDataDriven } from "../support/datadriven.js";

const TESTDATA = fileURLToPath(new URL("../../../test/compaction/testdata/", import.meta.url));

/** `apple#12,PUT = value` -> the entry (value "" when absent). */
function parseEntry(line: string): { key: string; seq: number; kind: 0 | 1; value: string } {
  const m = /^([^#,\s]+)#(\d+),(PUT|DEL)(?: = (.*))?$/.exec(line.trim());
  if (m === null) throw new Error(`not an entry: ${line}`);
  return {
    key: m[1]!,
    seq: Number(m[2]),
    kind: m[3] === "PUT" ? KIND_PUT : KIND_DELETE,
    value: m[4] ?? "",
  };
}

function showEntry(key: Uint8Array, seq: number, kind: number, value: Uint8Array): string {
  const ikey = formatInternalKey(key, seq, kind);
  return value.length === 0 ? ikey : `${ikey} = ${text(value)}`;
}

function parseRanges(arg: string | undefined): KeyRange[][] {
  if (arg === undefined || arg === "") return [];
  return arg.split(";").map((level) =>
    level.split(",").map((range) => {
      const [a, b] = range.split("-");
      return [bytes(a!), bytes(b ?? a!)] as const;
    }),
  );
}

function compact(c: DataDrivenCase): string[] {
  if (c.command !== "compact") throw new Error(`line ${c.line}: unknown command ${c.command}`);
  const input = new Memtable();
  for (const line of c.input) {
    const e = parseEntry(line);
    input.add(e.seq, e.kind, bytes(e.key), bytes(e.value));
  }
  const snapshots = (c.args.get("snapshots") ?? "")
    .split(",")
    .filter((s) => s !== "")
    .map(Number);
  const it = new CompactionIterator(input.iterator(), snapshots, parseRanges(c.args.get("deeper")));
  const steps = c.args.has("steps");
  const out: string[] = [];
  let kept = 0;
  for (let step = it.next(); step !== STEP_END; step = it.next()) {
    if (step === STEP_ENTRY) {
      kept++;
      out.push(showEntry(it.key, it.seq, it.kind, it.value));
    } else if (steps && step === STEP_USER_KEY) {
      out.push(`key ${text(it.key)}`);
    } else if (steps && step === STEP_SKIP) {
      out.push("skip");
    } else if (steps && step === STEP_YIELD) {
      out.push("yield");
    }
  }
  out.push(
    `in ${it.entriesIn}, kept ${kept}, dropped versions ${it.droppedVersions}, dropped tombstones ${it.droppedTombstones}`,
  );
  return out;
}

for (const file of readdirSync(TESTDATA)
  .filter((f) => f.endsWith(".txt"))
  .sort()) {
  runDataDriven(`${TESTDATA}${file}`, `testdata/${file}`, compact);
}
