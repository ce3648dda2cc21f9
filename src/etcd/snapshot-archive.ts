/**
 * The file etcd's Maintenance.Snapshot streams (and `etcdctl snapshot save` writes): our
 * own format, not etcd's bbolt database. It packs the files of a store directory (a
 * checkpoint: a single-node store that `kv-engine serve --data-dir` opens):
 *
 *   magic "KVENGINE-SNAPSHOT-1\n"
 *   per file: nameLen:u16be name(UTF-8, no '/') size:u64be bytes
 *   nameLen 0 (the end), then zeros up to a multiple of 512 bytes
 *   sha256 of every byte before it (32 bytes)
 *
 * The padding makes the size 32 more than a multiple of 512, which etcdctl 3.4's
 * `snapshot save` checks (it expects a bbolt file of 512-byte multiples and its hash).
 *
 * `kv-engine snapshot restore FILE --data-dir DIR` (unpackSnapshot) checks the hash and
 * writes the files into a new directory.
 */
import { createHash, randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { KvError } from "../errors.js";
import { type FileSystem, joinPath } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";

export const SNAPSHOT_MAGIC = Buffer.from("KVENGINE-SNAPSHOT-1\n", "latin1");
const HASH_BYTES = 32;
const CHUNK = 32 * 1024;
const PAGE = 512;

/** A packed directory: its total size and its bytes as chunks of at most 64 KiB. */
export interface PackedSnapshot {
  readonly totalBytes: number;
  chunks(): AsyncGenerator<Uint8Array, void, undefined>;
}

function fileHeader(name: string, size: number): Buffer {
  const n = Buffer.from(name, "utf8");
  const b = Buffer.allocUnsafe(2 + n.length + 8);
  b.writeUInt16BE(n.length, 0);
  n.copy(b, 2);
  b.writeBigUInt64BE(BigInt(size), 2 + n.length);
  return b;
}

/** Packs the files of `dir` on `fs` (not recursive), in name order. */
export async function packSnapshot(fs: FileSystem, dir: string): Promise<PackedSnapshot> {
  const names = (await fs.list(dir)).sort();
  const files: Array<{ name: string; size: number }> = [];
  for (const name of names) {
    if (name === "LOCK") continue;
    const path = joinPath(dir, name);
    if (!(await isFile(fs, path))) continue;
    files.push({ name, size: await fs.fileSize(path) });
  }
  let body = SNAPSHOT_MAGIC.length + 2;
  for (const f of files) body += fileHeader(f.name, f.size).length + f.size;
  const padding = (PAGE - (body % PAGE)) % PAGE;
  const total = body + padding + HASH_BYTES;
  return {
    totalBytes: total,
    async *chunks() {
      const h = createHash("sha256");
      const out = (b: Uint8Array) => {
        h.update(b);
        return b;
      };
      yield out(SNAPSHOT_MAGIC);
      for (const f of files) {
        yield out(fileHeader(f.name, f.size));
        const file = await fs.openReadable(joinPath(dir, f.name));
        try {
          for (let at = 0; at < f.size; ) {
            const buf = Buffer.allocUnsafe(Math.min(CHUNK, f.size - at));
            const n = file.read(buf, at);
            if (n === 0) throw new Error(`snapshot: ${f.name} shrank while packed`);
            at += n;
            yield out(buf.subarray(0, n));
          }
        } finally {
          await file.close();
        }
      }
      yield out(Buffer.alloc(2 + padding));
      yield h.digest();
    },
  };
}

/** True iff `path` is a file (a directory lists). */
async function isFile(fs: FileSystem, path: string): Promise<boolean> {
  try {
    await fs.list(path);
    return false;
  } catch {
    return true;
  }
}

/** Removes `dir` and everything under it on `fs` (no error when absent). */
export async function removeTree(fs: FileSystem, dir: string): Promise<void> {
  if (!(await fs.exists(dir))) return;
  for (const name of await fs.list(dir)) {
    const path = joinPath(dir, name);
    if (await isFile(fs, path)) await fs.remove(path);
    else await removeTree(fs, path);
  }
  await fs.removeDir(dir);
}

function bad(file: string, why: string): KvError {
  return new KvError("INVALID_ARGUMENT", `${file} is not a kv-engine snapshot: ${why}`);
}

/**
 * Writes the files packed in `file` into `dir`, which must not exist. Throws
 * INVALID_ARGUMENT (changing nothing) when `file` is not a snapshot or its hash fails
 * (an etcd bbolt snapshot, a truncated file), or when `dir` exists.
 */
export async function unpackSnapshot(
  file: string,
  dir: string,
  fs: FileSystem = new RealFileSystem(),
): Promise<{ files: number; bytes: number }> {
  const data = await readWhole(fs, file);
  if (data.length < SNAPSHOT_MAGIC.length + 2 + HASH_BYTES) throw bad(file, "too short");
  if (!data.subarray(0, SNAPSHOT_MAGIC.length).equals(SNAPSHOT_MAGIC))
    throw bad(file, "no kv-engine header (etcd's own snapshots are restored with etcdutl)");
  const body = data.subarray(0, data.length - HASH_BYTES);
  const digest = createHash("sha256").update(body).digest();
  if (!digest.equals(data.subarray(data.length - HASH_BYTES)))
    throw bad(file, "its hash does not match (truncated or damaged)");
  const files: Array<{ name: string; bytes: Uint8Array }> = [];
  let at = SNAPSHOT_MAGIC.length;
  for (;;) {
    if (at + 2 > body.length) throw bad(file, "truncated file list");
    const n = body.readUInt16BE(at);
    at += 2;
    if (n === 0) break;
    const name = body.subarray(at, at + n).toString("utf8");
    at += n;
    if (name.includes("/") || name === "." || name === "..") throw bad(file, `bad name ${name}`);
    const size = Number(body.readBigUInt64BE(at));
    at += 8;
    if (at + size > body.length) throw bad(file, `truncated ${name}`);
    files.push({ name, bytes: body.subarray(at, at + size) });
    at += size;
  }
  if (body.length - at >= PAGE || body.subarray(at).some((b) => b !== 0))
    throw bad(file, "bytes after the file list");
  if (await fs.exists(dir))
    throw new KvError("INVALID_ARGUMENT", `${dir} exists: restore into a new directory`);
  await fs.mkdir(dir);
  let bytes = 0;
  for (const f of files) {
    const out = await fs.createWritable(joinPath(dir, f.name));
    try {
      out.append(f.bytes);
      await out.sync();
    } finally {
      await out.close();
    }
    bytes += f.bytes.length;
  }
  await fs.syncDir(dir);
  return { files: files.length, bytes };
}

/** The bytes of `file` on `fs`; INVALID_ARGUMENT when it cannot be read. */
async function readWhole(fs: FileSystem, file: string): Promise<Buffer> {
  let f: Awaited<ReturnType<FileSystem["openReadable"]>>;
  try {
    f = await fs.openReadable(file);
  } catch (err) {
    throw new KvError("INVALID_ARGUMENT", `${file} cannot be read: ${(err as Error).message}`);
  }
  try {
    const out = Buffer.allocUnsafe(f.size);
    for (let at = 0; at < f.size; ) {
      const n = f.read(out.subarray(at), at);
      if (n === 0) throw new KvError("INVALID_ARGUMENT", `${file} shrank while read`);
      at += n;
    }
    return out;
  } finally {
    await f.close();
  }
}

/** Runs `use` with `file` unpacked into a temporary directory, removed afterwards. */
export async function withUnpackedSnapshot<T>(
  file: string,
  use: (dir: string) => Promise<T>,
): Promise<T> {
  const fs = new RealFileSystem();
  const tmp = joinPath(
    tmpdir(),
    `kv-engine-restore-${process.pid}-${randomBytes(6).toString("hex")}`,
  );
  try {
    const dir = joinPath(tmp, "store");
    await unpackSnapshot(file, dir, fs);
    return await use(dir);
  } finally {
    await removeTree(fs, tmp).catch(() => {});
  }
}
