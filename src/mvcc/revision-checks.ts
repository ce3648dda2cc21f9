/** The revision checks of a range (types.ts, MvccView), with etcd's messages. */
import { KvError } from "../errors.js";

export function compactedError(): KvError {
  return new KvError("COMPACTED", "mvcc: required revision has been compacted");
}

export function futureError(): KvError {
  return new KvError("FUTURE_REVISION", "mvcc: required revision is a future revision");
}

/**
 * The revision a range reads: `asked` when positive, else `current`. Throws
 * INVALID_ARGUMENT unless `asked` is an integer (or absent), FUTURE_REVISION above
 * `current`, COMPACTED below `compacted`.
 */
export function checkRevision(
  asked: number | undefined,
  current: number,
  compacted: number,
): number {
  if (asked !== undefined && !Number.isSafeInteger(asked)) {
    throw new KvError("INVALID_ARGUMENT", "revision must be an integer");
  }
  const rev = asked === undefined || asked <= 0 ? current : asked;
  if (rev > current) throw futureError();
  if (rev < compacted) throw compactedError();
  return rev;
}
