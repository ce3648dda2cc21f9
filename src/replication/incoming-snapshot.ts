/**
 * Receiving a snapshot's files into D/snap/incoming-<index>-<n>/ (a SnapshotSink). Files
 * come in the descriptor's order, each from its first byte; each is checked against the
 * descriptor's size and CRC-32C and made durable (fsync) when complete; `finish` syncs the
 * directory and its parent, then hands the directory over (`onComplete`, which steps the
 * Raft message). Anything that does not check out aborts: the directory is removed and
 * nothing is stepped. Installing what was received is the state machine's business
 * (state-machine.ts, `install`; a ReceivedSnapshot).
 */
import { ioError, isKvError, KvError } from "../errors.js";
import { crc32cExtend } from "../util/crc32c.js";
import { dirName, type FileSystem, joinPath, type WritableFile } from "../vfs/file-system.js";
import { removeTree } from "../vfs/remove-tree.js";
import type { SnapshotSink } from "./peer-transport.js";
import type { SnapshotDescriptor } from "./snapshot-descriptor.js";

export class IncomingSnapshot implements SnapshotSink {
  private position = -1;
  private file: WritableFile | undefined;
  private written = 0;
  private crc = 0;
  private done = false;
  private created = false;
  private bytes = 0;

  /**
   * @param onComplete called by `finish` once every file is durable; what it throws
   *   rejects `finish` (and the directory is removed).
   */
  constructor(
    private readonly fs: FileSystem,
    readonly path: string,
    readonly descriptor: SnapshotDescriptor,
    private readonly onComplete: (sink: IncomingSnapshot) => void,
  ) {}

  /** Bytes received so far. */
  get received(): number {
    return this.bytes;
  }

  async write(name: string, data: Uint8Array): Promise<void> {
    try {
      if (this.done) throw new KvError("INVALID_ARGUMENT", "snapshot stream already ended");
      await this.ensureDir();
      const current = this.descriptor.files[this.position];
      if (current === undefined || current.name !== name) await this.moveTo(name);
      const info = this.descriptor.files[this.position]!;
      if (this.written + data.length > info.size) {
        throw new KvError(
          "CORRUPTION",
          `snapshot file ${name} is longer than its ${info.size} bytes`,
        );
      }
      this.file!.append(data);
      this.written += data.length;
      this.bytes += data.length;
      this.crc = crc32cExtend(this.crc, data);
    } catch (err) {
      await this.abort(err);
      throw isKvError(err) ? err : ioError(`write snapshot file ${name}`, err, this.path);
    }
  }

  async finish(): Promise<void> {
    try {
      if (this.done) throw new KvError("INVALID_ARGUMENT", "snapshot stream already ended");
      await this.ensureDir();
      await this.completeThrough(this.descriptor.files.length);
      await this.fs.syncDir(this.path);
      await this.fs.syncDir(dirName(this.path));
      this.done = true;
      this.onComplete(this);
    } catch (err) {
      await this.abort(err);
      throw isKvError(err) ? err : ioError("finish snapshot", err, this.path);
    }
  }

  async abort(_reason?: unknown): Promise<void> {
    if (this.done && this.file === undefined && !this.created) return;
    this.done = true;
    const file = this.file;
    this.file = undefined;
    await file?.close().catch(() => {});
    if (this.created) {
      this.created = false;
      await removeTree(this.fs, this.path).catch(() => {});
    }
  }

  /** Called by the owner once the directory was taken over (renamed): abort does nothing more. */
  handedOver(): void {
    this.created = false;
  }

  private async ensureDir(): Promise<void> {
    if (this.created) return;
    await this.fs.mkdir(this.path);
    await this.fs.syncDir(dirName(this.path));
    this.created = true;
  }

  /** Completes the current file and every empty one up to `name`, then opens `name`. */
  private async moveTo(name: string): Promise<void> {
    const at = this.descriptor.files.findIndex((f) => f.name === name);
    if (at < 0) throw new KvError("CORRUPTION", `snapshot file ${name} is not in the descriptor`);
    if (at <= this.position)
      throw new KvError("CORRUPTION", `snapshot file ${name} sent out of order`);
    await this.completeThrough(at);
    this.position = at;
    this.file = await this.fs.createWritable(joinPath(this.path, name));
    this.written = 0;
    this.crc = 0;
  }

  /** Checks, syncs and closes the current file, then creates the (empty) files before `end`. */
  private async completeThrough(end: number): Promise<void> {
    if (this.file !== undefined) {
      const info = this.descriptor.files[this.position]!;
      this.checkComplete(info.name, info.size, info.crc32c);
      await this.file.sync();
      await this.file.close();
      this.file = undefined;
    }
    for (let i = this.position + 1; i < end; i++) {
      const info = this.descriptor.files[i]!;
      if (info.size !== 0)
        throw new KvError("CORRUPTION", `snapshot file ${info.name} was not sent`);
      this.checkComplete(info.name, 0, info.crc32c);
      const f = await this.fs.createWritable(joinPath(this.path, info.name));
      await f.sync();
      await f.close();
      this.position = i;
    }
  }

  private checkComplete(name: string, size: number, crc: number): void {
    const written = this.file === undefined ? 0 : this.written;
    const got = this.file === undefined ? 0 : this.crc >>> 0;
    if (written !== size) {
      throw new KvError(
        "CORRUPTION",
        `snapshot file ${name}: ${written} of ${size} bytes received`,
      );
    }
    if (got !== crc) throw new KvError("CORRUPTION", `snapshot file ${name}: checksum mismatch`);
  }
}
