/**
 * `lost/`: where `repair` puts the files it takes out of a store instead of deleting them
 * (damaged tables, the originals of salvaged tables and rewritten logs, tables and logs
 * the repaired manifest does not use, old manifests), as LevelDB's RepairDB does. The
 * store ignores the directory (its name is no store file name, so no sweep touches it);
 * remove it once the repaired store is checked.
 *
 * A file is archived by a hard link into `lost/` (durable when `archive` resolves: the
 * directory synced), while its name in the store stays; repair removes that name only
 * once the new manifest no longer needs it, so a crash at any point loses nothing.
 */
import { ioError } from "../errors.js";
import { baseName, type FileSystem, joinPath } from "../vfs/file-system.js";

/** The directory's name, inside the data directory. */
export const LOST_DIR = "lost";

export class LostFiles {
  readonly dir: string;
  private made = false;

  constructor(
    private readonly fs: FileSystem,
    private readonly storeDir: string,
  ) {
    this.dir = joinPath(storeDir, LOST_DIR);
  }

  /**
   * Hard-links the file at `path` into lost/ under its own name (`NAME.1`, `NAME.2`, ...
   * when taken, e.g. by an earlier repair); returns the new path, durable.
   */
  async archive(path: string): Promise<string> {
    const { fs } = this;
    try {
      if (!this.made) {
        if (!(await fs.exists(this.dir))) {
          await fs.mkdir(this.dir);
          await fs.syncDir(this.storeDir);
        }
        this.made = true;
      }
      const name = baseName(path);
      let target = joinPath(this.dir, name);
      for (let i = 1; await fs.exists(target); i++) target = joinPath(this.dir, `${name}.${i}`);
      await fs.link(path, target);
      await fs.syncDir(this.dir);
      return target;
    } catch (err) {
      throw ioError(`move ${path} into ${this.dir}`, err, path);
    }
  }
}
