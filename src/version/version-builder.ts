/**
 * VersionBuilder: applies a run of version edits to a base version and builds the result,
 * checking that each edit fits: levels in range, every deleted file present at the level
 * named, every added file well formed and not already present. `build` checks the level
 * invariants of version.ts (deeper levels must not overlap). Failures throw
 * VersionEditError; after one, discard the builder.
 *
 * Levels an edit does not touch are shared with the base version, not copied.
 */
import { type FileMetadata, fileMetadataProblem } from "./file-metadata.js";
import {
  compareBySmallest,
  compareLevel0,
  Version,
  VersionEditError,
  type VersionReleaseHook,
} from "./version.js";
import type { VersionEdit } from "./version-edit.js";

export class VersionBuilder {
  /** Level of every file present after the edits applied so far. */
  private readonly live = new Map<number, number>();
  /** Per level: files added by the edits (and not deleted again). */
  private readonly added: Map<number, FileMetadata>[] = [];
  /** Per level: numbers of base files deleted by the edits. */
  private readonly deleted: Set<number>[] = [];

  constructor(private readonly base: Version) {
    base.levels.forEach((files, level) => {
      for (const f of files) this.live.set(f.number, level);
      this.added.push(new Map());
      this.deleted.push(new Set());
    });
  }

  get numLevels(): number {
    return this.base.numLevels;
  }

  /** Applies one edit: its deletions, then its additions. Throws VersionEditError. */
  apply(edit: VersionEdit): void {
    for (const { level, number } of edit.deletedFiles) {
      this.checkLevel(level, `delete file ${number}`);
      const at = this.live.get(number);
      if (at !== level) {
        throw new VersionEditError(
          `deletes file ${number} from level ${level}, ` +
            (at === undefined ? "but no such file is present" : `but it is at level ${at}`),
        );
      }
      this.live.delete(number);
      if (!this.added[level]!.delete(number)) this.deleted[level]!.add(number);
    }
    for (const { level, file } of edit.addedFiles) {
      this.checkLevel(level, `add file ${file.number}`);
      const problem = fileMetadataProblem(file);
      if (problem !== undefined) throw new VersionEditError(`adds a bad file: ${problem}`);
      const at = this.live.get(file.number);
      if (at !== undefined) {
        throw new VersionEditError(
          `adds file ${file.number} to level ${level}, but it is already at level ${at}`,
        );
      }
      this.live.set(file.number, level);
      this.added[level]!.set(file.number, file);
    }
  }

  /** The version after every edit applied; throws VersionEditError if a level overlaps. */
  build(onRelease?: VersionReleaseHook): Version {
    const levels = this.base.levels.map((files, level) => {
      const added = this.added[level]!;
      const deleted = this.deleted[level]!;
      if (added.size === 0 && deleted.size === 0) return files;
      const out = files.filter((f) => !deleted.has(f.number));
      for (const f of added.values()) out.push(f);
      out.sort(level === 0 ? compareLevel0 : compareBySmallest);
      return out;
    });
    return new Version(levels, onRelease);
  }

  private checkLevel(level: number, what: string): void {
    if (!Number.isSafeInteger(level) || level < 0 || level >= this.numLevels) {
      throw new VersionEditError(`${what}: level ${level} out of range [0, ${this.numLevels})`);
    }
  }
}
