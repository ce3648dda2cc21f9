/**
 * Shared pieces of the cluster crash-point tests (compaction-crash-points,
 * upgrade-crash-points): which file operations change a disk (a crash before one of them
 * is a crash point), a member's multi-version store, and whether an operation appends a
 * big batch to a member's store log.
 */
import type { MvccStore } from "../../src/mvcc/mvcc-store.js";
import type { ReplicatedStore } from "../../src/replication/replicated-store.js";
import {
  FILE_OP_KINDS,
  type FileOp,
  type FileOpKind,
} from "../../src/vfs/fault-injecting-file-system.js";

/** Operations that only read or lock: a crash before one of them changes nothing. */
const READ_ONLY = new Set<FileOpKind>([
  "openReadable",
  "list",
  "exists",
  "fileSize",
  "lock",
  "read",
  "close",
]);

/** Operations that change what a disk holds: a crash before one of them is a crash point. */
export const CHANGING: ReadonlySet<FileOpKind> = new Set(
  FILE_OP_KINDS.filter((k) => !READ_ONLY.has(k)),
);

/** The multi-version store a member applies to (a test's look inside the member). */
export function mvccOf(s: ReplicatedStore): MvccStore {
  const machine = (s as unknown as { machine: { localMvcc(): MvccStore | undefined } }).machine;
  const m = machine.localMvcc();
  if (m === undefined) throw new Error(`${s.name}: no multi-version store`);
  return m;
}

/** Whether `op` appends more than `bytes` bytes to a member's store log (`D/store…/N.log`). */
export function isBigStoreAppend(op: FileOp, bytes: number): boolean {
  return (
    op.kind === "append" && /\/store[^/]*\/[^/]*\.log$/.test(op.path) && (op.length ?? 0) > bytes
  );
}
