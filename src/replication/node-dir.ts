/**
 * A cluster member's data directory (docs/cluster.md, "Layout"):
 *
 *   D/LOCK            the member's lock (held while it runs; covers member.json, STORE, snap/)
 *   D/member.json     identity: format, cluster ID, member ID, name (writeFileAtomically)
 *   D/STORE           the name of the current store directory (writeFileAtomically);
 *                     absent: "store"
 *   D/raft/           the Raft log (RaftLogStorage, its own LOCK)
 *   D/store/, D/store-<index>/   the KvStore (its own LOCK): the first one, and each one
 *                     installed from a leader's snapshot at <index>
 *   D/snap/<index>/   snapshots: store checkpoints taken here at an applied index
 *   D/snap/incoming-<index>-<n>/   a snapshot being received
 *
 * A plain store (a CURRENT file in D) is refused, as a plain store refuses D/member.json.
 * At open, store directories STORE does not name and unfinished incoming snapshots are
 * leftovers of an install or a receive that a crash interrupted: they are removed.
 */
import { ioError, isKvError, KvError } from "../errors.js";
import { CLUSTER_MEMBER_FILE, CURRENT_FILE, LOCK_FILE } from "../version/file-names.js";
import { writeFileAtomically } from "../vfs/atomic-write.js";
import {
  dirName,
  type FileLock,
  type FileSystem,
  joinPath,
  LockHeldError,
} from "../vfs/file-system.js";
import { removeTree } from "../vfs/remove-tree.js";
import { isMemberId, type MemberId } from "./members.js";

export const MEMBER_FILE = CLUSTER_MEMBER_FILE;
export const STORE_FILE = "STORE";
export const RAFT_DIR = "raft";
export const SNAP_DIR = "snap";
export const FIRST_STORE = "store";
const INCOMING_PREFIX = "incoming-";
const IDENTITY_FORMAT = 1;

/** What D/member.json holds. */
export interface StoredIdentity {
  readonly clusterId: number;
  readonly memberId: MemberId;
  readonly name: string;
}

/** The name of the store directory installed from a snapshot at `index`. */
export function storeDirName(index: number): string {
  return `store-${index}`;
}

/** The name of a snapshot directory: the index, zero-padded so names sort by index. */
export function snapshotDirName(index: number): string {
  return String(index).padStart(16, "0");
}

export class NodeDir {
  private incomingSerial = 0;

  private constructor(
    readonly fs: FileSystem,
    readonly path: string,
    private readonly lock: FileLock,
    /** The identity found at open (undefined for a new member). */
    readonly identity: StoredIdentity | undefined,
    /** The current store directory's name. */
    private current: string,
    /** Indexes of the snapshots in D/snap, ascending. */
    readonly snapshots: number[],
  ) {}

  /**
   * Opens (creating) D: takes D/LOCK (KvError LOCKED when held), refuses a plain store
   * (FAILED_PRECONDITION), reads the identity and STORE, removes leftovers.
   */
  static async open(fs: FileSystem, path: string): Promise<NodeDir> {
    try {
      if (!(await fs.exists(path))) {
        await fs.mkdir(path);
        await fs.syncDir(dirName(path));
      }
    } catch (err) {
      throw ioError(`create data directory ${path}`, err, path);
    }
    const lock = await takeLock(fs, joinPath(path, LOCK_FILE));
    try {
      const names = await fs.list(path);
      if (names.includes(CURRENT_FILE)) {
        throw new KvError(
          "FAILED_PRECONDITION",
          `${path} holds a plain (single-node) store, not a cluster member's data: start it without --initial-cluster, or use an empty directory`,
          { file: joinPath(path, CURRENT_FILE) },
        );
      }
      const identity = names.includes(MEMBER_FILE)
        ? await readIdentity(fs, joinPath(path, MEMBER_FILE))
        : undefined;
      const current = names.includes(STORE_FILE)
        ? await readStoreName(fs, joinPath(path, STORE_FILE))
        : FIRST_STORE;
      const dir = new NodeDir(fs, path, lock, identity, current, []);
      await dir.removeLeftovers(names);
      return dir;
    } catch (err) {
      await lock.release().catch(() => {});
      throw isKvError(err) ? err : ioError(`open data directory ${path}`, err, path);
    }
  }

  get raftPath(): string {
    return joinPath(this.path, RAFT_DIR);
  }

  get storePath(): string {
    return joinPath(this.path, this.current);
  }

  get storeName(): string {
    return this.current;
  }

  snapshotPath(index: number): string {
    return joinPath(this.path, SNAP_DIR, snapshotDirName(index));
  }

  /** A fresh directory name for an incoming snapshot at `index` (not created). */
  incomingPath(index: number): string {
    return joinPath(this.path, SNAP_DIR, `${INCOMING_PREFIX}${index}-${++this.incomingSerial}`);
  }

  /** Writes D/member.json durably. */
  async writeIdentity(id: StoredIdentity): Promise<void> {
    const json = JSON.stringify({ format: IDENTITY_FORMAT, ...id });
    await writeFileAtomically(this.fs, joinPath(this.path, MEMBER_FILE), Buffer.from(`${json}\n`));
  }

  /**
   * Makes `name` (a directory of D, complete and durable) the current store: D/STORE is
   * replaced atomically and durably. The caller closed the old store first.
   */
  async switchStore(name: string): Promise<void> {
    await writeFileAtomically(this.fs, joinPath(this.path, STORE_FILE), Buffer.from(`${name}\n`));
    this.current = name;
  }

  /** Creates D/snap (durably) if absent. */
  async ensureSnapDir(): Promise<void> {
    const snap = joinPath(this.path, SNAP_DIR);
    if (await this.fs.exists(snap)) return;
    await this.fs.mkdir(snap);
    await this.fs.syncDir(this.path);
  }

  /** Removes a directory and everything in it (one level of subdirectories and more), then syncs its parent. */
  async removeTree(path: string): Promise<void> {
    await removeTree(this.fs, path);
    await this.fs.syncDir(dirName(path));
  }

  async close(): Promise<void> {
    await this.lock.release();
  }

  private async removeLeftovers(names: string[]): Promise<void> {
    let removed = false;
    for (const name of names) {
      if ((name === FIRST_STORE || name.startsWith("store-")) && name !== this.current) {
        await removeTree(this.fs, joinPath(this.path, name));
        removed = true;
      }
    }
    if (removed) await this.fs.syncDir(this.path);
    if (!names.includes(SNAP_DIR)) return;
    const snap = joinPath(this.path, SNAP_DIR);
    let removedSnap = false;
    for (const name of await this.fs.list(snap)) {
      if (/^[0-9]{16}$/.test(name)) {
        this.snapshots.push(Number(name));
      } else {
        await removeTree(this.fs, joinPath(snap, name));
        removedSnap = true;
      }
    }
    this.snapshots.sort((a, b) => a - b);
    if (removedSnap) await this.fs.syncDir(snap);
  }
}

async function takeLock(fs: FileSystem, path: string): Promise<FileLock> {
  try {
    return await fs.lock(path);
  } catch (err) {
    if (err instanceof LockHeldError) {
      throw new KvError("LOCKED", `${dirName(path)} is in use by another cluster member process`, {
        file: path,
        cause: err,
      });
    }
    throw ioError("cannot take the data-directory lock", err, path);
  }
}

async function readText(fs: FileSystem, path: string): Promise<string> {
  const file = await fs.openReadable(path);
  try {
    const buf = new Uint8Array(file.size);
    file.read(buf, 0);
    return Buffer.from(buf).toString("utf8");
  } finally {
    await file.close();
  }
}

async function readIdentity(fs: FileSystem, path: string): Promise<StoredIdentity> {
  let o: { format?: unknown; clusterId?: unknown; memberId?: unknown; name?: unknown };
  try {
    o = JSON.parse(await readText(fs, path)) as typeof o;
  } catch (err) {
    throw new KvError("CORRUPTION", `${path} is not a member identity file`, {
      file: path,
      cause: err,
    });
  }
  if (o.format !== IDENTITY_FORMAT) {
    throw new KvError("CORRUPTION", `${path} has an unknown format ${String(o.format)}`, {
      file: path,
    });
  }
  if (!isMemberId(o.clusterId) || !isMemberId(o.memberId) || typeof o.name !== "string") {
    throw new KvError("CORRUPTION", `${path} lacks clusterId, memberId or name`, { file: path });
  }
  return { clusterId: o.clusterId, memberId: o.memberId, name: o.name };
}

async function readStoreName(fs: FileSystem, path: string): Promise<string> {
  const name = (await readText(fs, path)).trim();
  if (name !== FIRST_STORE && !/^store-[0-9]+$/.test(name)) {
    throw new KvError("CORRUPTION", `${path} names no store directory (${JSON.stringify(name)})`, {
      file: path,
    });
  }
  return name;
}
