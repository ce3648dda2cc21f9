/**
 * Writes decided in the commit path (commit-queue.ts, "Decided writes"): `writeDecided`, the
 * building block, and `compareAndSwap` on top of it. KvStore's methods of the same names
 * call these with its parts; a replicated store's conditional apply uses writeDecided
 * through KvStore.
 */
import { type BytesLike, byteLengthOf, checkKey, toBytes } from "../batch/bytes.js";
import {
  batchCount,
  encodeSingleDelete,
  encodeSinglePut,
  validateBatch,
} from "../batch/write-batch.js";
import type { CommitQueue } from "./commit-queue.js";
import type { CasResult } from "./kv-backend.js";
import type { MemtableSet } from "./memtable-set.js";
import { MISSING_TABLE, type PointGet } from "./point-get.js";
import type { WriteOptions } from "./write-options.js";

/** What a decided write reads and where it is committed. */
export interface DecidedWriteParts {
  readonly reads: PointGet;
  readonly memtables: MemtableSet;
  readonly commits: CommitQueue;
}

/**
 * Submits a write whose batch `decide` computes when its turn comes: after every earlier
 * write is applied and visible and before any later one is. `decide` returns the encoded
 * batch to commit, or undefined to write nothing; `read` gives a key's newest value as of
 * that moment (synchronously; a copy). Resolves to whether a batch was committed; what
 * `decide` throws rejects this write alone.
 */
export function writeDecided(
  parts: DecidedWriteParts,
  decide: (read: (key: Uint8Array) => Uint8Array | undefined) => Uint8Array | undefined,
  sync: boolean,
  signal: WriteOptions["signal"],
): Promise<boolean> {
  let wrote = false;
  const read = (key: Uint8Array): Uint8Array | undefined => {
    const found = parts.reads.fromView(parts.memtables.view, key, parts.commits.sequence, true);
    if (found === MISSING_TABLE) throw new Error("writeDecided: a table was not opened");
    return found;
  };
  const run = (): Uint8Array | undefined => {
    const rep = decide(read);
    if (rep !== undefined) {
      validateBatch(rep);
      if (batchCount(rep) === 0) return undefined;
      wrote = true;
    }
    return rep;
  };
  return parts.commits.submitDecided(run, sync, signal).then(() => wrote);
}

/**
 * Compare-and-swap as KvStore.compareAndSwap documents it: iff the newest value of `key` is
 * `expected` (undefined: absent or deleted) when the write's turn comes, stores `next`
 * (undefined: deletes). Throws INVALID_ARGUMENT synchronously for a bad key or value.
 */
export function compareAndSwap(
  parts: DecidedWriteParts,
  key: BytesLike,
  expected: BytesLike | undefined,
  next: BytesLike | undefined,
  sync: boolean,
  signal: WriteOptions["signal"],
): Promise<CasResult> {
  checkKey(key);
  const k = toBytes(key);
  const want = expected === undefined ? undefined : toBytes(checkValue(expected));
  const put = next === undefined ? undefined : toBytes(checkValue(next));
  let result: CasResult = { applied: false, current: undefined };
  const decided = writeDecided(
    parts,
    (read) => {
      const current = read(k);
      if (!sameValue(current, want)) {
        result = { applied: false, current };
        return undefined;
      }
      result = { applied: true, current: put === undefined ? undefined : Buffer.from(put) };
      return put === undefined ? encodeSingleDelete(k) : encodeSinglePut(k, put);
    },
    sync,
    signal,
  );
  return decided.then(() => result);
}

/** `value` if it is bytes or a string; throws INVALID_ARGUMENT otherwise. */
function checkValue(value: BytesLike): BytesLike {
  byteLengthOf(value, "value");
  return value;
}

/** True iff both are absent or both hold the same bytes. */
function sameValue(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.compare(a, b) === 0;
}
