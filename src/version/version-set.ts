/**
 * VersionSet: owns the current Version, the manifest and the file-number counter, and
 * makes every change to the set of table files durable before it becomes visible
 * (docs/format/manifest.md).
 *
 * Durability protocol:
 * - `logAndApply(edit)`: checks that the edit fits the current version, appends it to the
 *   manifest as one log record, fdatasyncs the manifest, and only then installs the new
 *   version. The returned promise resolves once the edit is durable and current.
 * - A new manifest (at `create`, at every `recover`, and when the manifest outgrows
 *   `maxManifestBytes`) is written by manifest-writer.ts: `MANIFEST-N` holding a snapshot
 *   edit (every file plus the counters), synced, its name made durable, then CURRENT
 *   swapped to name it (current-file.ts). Only then is the previous manifest obsolete and
 *   deleted. A crash at any point leaves CURRENT naming a complete manifest.
 *
 * Failures: if an append, sync, rename or directory fsync of the manifest protocol fails,
 * the outcome on disk is unknown (the edit may or may not be in the manifest; after a
 * failed fsync the kernel may have dropped the dirty pages and a retry could report a false
 * success). The set then turns failed: that call throws IO_ERROR, the current version is
 * unchanged, and every later `logAndApply` (and `liveFileNumbers`) throws READ_ONLY until
 * the store is reopened (`recover`), or, after a no-space failure, until
 * `resumeAfterNoSpace` wrote a new manifest. An edit that does not fit the current version is a
 * caller bug: it throws VersionEditError before any I/O and the set stays usable.
 *
 * Concurrency: `logAndApply` calls are queued and run one at a time in call order;
 * `close` runs after every call queued before it.
 *
 * File numbers: one counter for every numbered file (logs, tables, manifests, temp files).
 * `create` and `recover` list the directory and skip every number a file there already
 * has, so no number is ever reused, even one allocated but not yet recorded before a crash.
 */
import { ioError, isNoSpace, KvError } from "../errors.js";
import type { FileSystem } from "../vfs/file-system.js";
import type { LogWriter } from "../wal/log-writer.js";
import { currentExists, readCurrent } from "./current-file.js";
import { currentFilePath, manifestFilePath, parseFileName } from "./file-names.js";
import { replayManifest } from "./manifest-replay.js";
import {
  installManifest,
  type ManifestCounters,
  snapshotEdit,
  writeManifest,
} from "./manifest-writer.js";
import { NUM_LEVELS, Version, VersionEditError, type VersionReleaseHook } from "./version.js";
import { VersionBuilder } from "./version-builder.js";
import {
  BYTEWISE_COMPARATOR,
  encodeVersionEdit,
  MANIFEST_FORMAT_VERSION,
  type VersionEdit,
} from "./version-edit.js";

/** Default manifest size that triggers a rollover to a new manifest (4 MiB). */
export const DEFAULT_MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface VersionSetOptions {
  /** Number of levels (default NUM_LEVELS = 7). Must match the store's manifest. */
  numLevels?: number;
  /**
   * Roll over to a new manifest (a snapshot plus a CURRENT swap) before appending to one
   * that has reached this size, or twice its size after the snapshot if that is larger.
   * Default DEFAULT_MAX_MANIFEST_BYTES.
   */
  maxManifestBytes?: number;
  /**
   * Called when a version is released (its last reference dropped): some files may have
   * become obsolete (see `liveFileNumbers`). Runs synchronously inside `unref`; must not
   * throw.
   */
  onVersionReleased?: VersionReleaseHook;
}

/** What `recover` read. */
export interface ManifestRecovery {
  /** Path of the manifest replayed. */
  readonly manifest: string;
  /** Edits replayed (the snapshot included). */
  readonly edits: number;
  /** Bytes of a torn last record dropped: an edit whose logAndApply never resolved. */
  readonly tornTailBytes: number;
  /** Path of the manifest written at recovery (now named by CURRENT). */
  readonly newManifest: string;
}

const noop = (): void => {};

export class VersionSet {
  readonly fs: FileSystem;
  readonly dir: string;
  readonly numLevels: number;
  readonly maxManifestBytes: number;
  /** Set by `recover`: what was replayed. */
  recovery: ManifestRecovery | undefined = undefined;
  /**
   * Called when a version is released (see VersionSetOptions.onVersionReleased); may be
   * set after construction, e.g. once the store that sweeps obsolete files exists.
   */
  onVersionReleased: VersionReleaseHook | undefined;

  private currentVersion: Version;
  /** Versions with references (the current one included). */
  private readonly liveVersions = new Set<Version>();
  private readonly releaseHook: VersionReleaseHook;
  private nextFileNumberValue: number;
  private lastSequenceValue: number;
  private logNumberValue: number;
  private manifestNumberValue = 0;
  private manifest: LogWriter | undefined;
  private rolloverAt = 0;
  private failure: KvError | undefined;
  private closeRequested: Promise<void> | undefined;
  private queue: Promise<void> = Promise.resolve();

  private constructor(
    fs: FileSystem,
    dir: string,
    options: VersionSetOptions,
    build: (hook: VersionReleaseHook) => Version,
    counters: ManifestCounters,
  ) {
    const numLevels = options.numLevels ?? NUM_LEVELS;
    if (!Number.isSafeInteger(numLevels) || numLevels < 2) {
      throw new KvError("INVALID_ARGUMENT", `numLevels must be an integer >= 2, got ${numLevels}`);
    }
    const maxManifestBytes = options.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
    if (!Number.isSafeInteger(maxManifestBytes) || maxManifestBytes < 1) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `maxManifestBytes must be a positive integer, got ${maxManifestBytes}`,
      );
    }
    this.fs = fs;
    this.dir = dir;
    this.numLevels = numLevels;
    this.maxManifestBytes = maxManifestBytes;
    this.onVersionReleased = options.onVersionReleased;
    this.releaseHook = (version) => {
      this.liveVersions.delete(version);
      this.onVersionReleased?.(version);
    };
    this.currentVersion = build(this.releaseHook);
    this.currentVersion.ref();
    this.liveVersions.add(this.currentVersion);
    this.nextFileNumberValue = counters.nextFileNumber;
    this.lastSequenceValue = counters.lastSequence;
    this.logNumberValue = counters.logNumber;
    for (const { file } of this.currentVersion.allFiles()) this.markFileNumberUsed(file.number);
    this.markFileNumberUsed(counters.logNumber);
  }

  /** True iff `dir` holds a store (a CURRENT file). */
  static storeExists(fs: FileSystem, dir: string): Promise<boolean> {
    return currentExists(fs, dir);
  }

  /**
   * Starts a new, empty store in the existing directory `dir` (the caller creates it, makes
   * its name durable and holds its lock): writes the first manifest and CURRENT. Throws
   * INVALID_ARGUMENT if `dir` already has a CURRENT file, IO_ERROR if a file operation fails.
   */
  static async create(
    fs: FileSystem,
    dir: string,
    options: VersionSetOptions = {},
  ): Promise<VersionSet> {
    if (await VersionSet.storeExists(fs, dir)) {
      throw new KvError("INVALID_ARGUMENT", `${dir} already holds a store (it has a CURRENT)`, {
        file: currentFilePath(dir),
      });
    }
    const numLevels = options.numLevels ?? NUM_LEVELS;
    const set = new VersionSet(fs, dir, options, (hook) => Version.empty(numLevels, hook), {
      nextFileNumber: 1,
      lastSequence: 0,
      logNumber: 0,
    });
    const names = await set.skipUsedNumbers();
    await set.startManifest(undefined);
    await set.removeStaleManifests(names);
    return set;
  }

  /**
   * Opens an existing store in `dir` (the caller holds its lock): reads CURRENT, replays the
   * manifest it names (a torn last record is an edit that was never acknowledged and is
   * dropped), then always writes a new manifest holding a snapshot and swaps CURRENT to it,
   * and deletes every older manifest and temp file.
   *
   * Throws CORRUPTION (naming the file) when CURRENT is missing or malformed, when the
   * manifest is missing, damaged before its last record, holds an edit that does not decode
   * or does not apply, lacks a counter, was written with another comparator or a newer
   * format version, or has more levels than `numLevels`; IO_ERROR when a file operation
   * fails.
   */
  static async recover(
    fs: FileSystem,
    dir: string,
    options: VersionSetOptions = {},
  ): Promise<VersionSet> {
    const numLevels = options.numLevels ?? NUM_LEVELS;
    const manifestNumber = await readCurrent(fs, dir);
    const replay = await replayManifest(fs, manifestFilePath(dir, manifestNumber), numLevels);
    const set = new VersionSet(fs, dir, options, (hook) => replay.builder.build(hook), replay);
    set.manifestNumberValue = manifestNumber;
    set.markFileNumberUsed(manifestNumber);
    const names = await set.skipUsedNumbers();
    await set.startManifest(undefined);
    set.recovery = {
      manifest: replay.path,
      edits: replay.edits,
      tornTailBytes: replay.tornTailBytes,
      newManifest: manifestFilePath(dir, set.manifestNumberValue),
    };
    await set.removeStaleManifests(names);
    return set;
  }

  /** The current version. Ref it to keep its files alive beyond the current call. */
  get current(): Version {
    return this.currentVersion;
  }

  /** Write-ahead logs numbered below this are no longer needed (as of the last edit). */
  get logNumber(): number {
    return this.logNumberValue;
  }

  /** Highest sequence number in use. The store advances it as it commits writes. */
  get lastSequence(): number {
    return this.lastSequenceValue;
  }

  /** Sets the highest sequence number in use; it never goes backwards (RangeError). */
  set lastSequence(seq: number) {
    if (!Number.isSafeInteger(seq) || seq < this.lastSequenceValue) {
      throw new RangeError(
        `lastSequence must not go backwards: ${this.lastSequenceValue} -> ${seq}`,
      );
    }
    this.lastSequenceValue = seq;
  }

  /** The number the next `newFileNumber` returns. */
  get nextFileNumber(): number {
    return this.nextFileNumberValue;
  }

  /**
   * Number of the current manifest. A MANIFEST-N or N.dbtmp with N below it is obsolete;
   * one with N above it may be a rollover in progress: never delete it.
   */
  get manifestNumber(): number {
    return this.manifestNumberValue;
  }

  /** Bytes in the current manifest. */
  get manifestSize(): number {
    return this.manifest?.size ?? 0;
  }

  /** The error that turned the set failed, or undefined. */
  get failed(): KvError | undefined {
    return this.failure;
  }

  /**
   * Allocates a file number. It becomes durable (as the `nextFileNumber` of the next edit)
   * only with the next logAndApply; `recover` also skips numbers of files it finds.
   */
  newFileNumber(): number {
    return this.nextFileNumberValue++;
  }

  /** Makes sure `newFileNumber` never returns `n` (nor anything below it from now on). */
  markFileNumberUsed(n: number): void {
    if (n >= this.nextFileNumberValue) this.nextFileNumberValue = n + 1;
  }

  /**
   * Applies `edit` durably (see the module comment). The edit is not modified; the record
   * written is a copy with `logNumber` (default: unchanged), `lastSequence` (default: the
   * set's) and `nextFileNumber` (always the set's counter) filled in. Its logNumber and
   * lastSequence must not go backwards, and deeper levels must not overlap afterwards.
   *
   * Throws VersionEditError (nothing written, the set stays usable) for an edit that does
   * not fit; IO_ERROR when the manifest write fails (the set turns failed); READ_ONLY after
   * a failure; CLOSED once `close` was called.
   */
  logAndApply(edit: VersionEdit): Promise<void> {
    if (this.closeRequested !== undefined) {
      return Promise.reject(new KvError("CLOSED", `version set ${this.dir} is closed`));
    }
    const run = this.queue.then(() => this.applyNow(edit));
    this.queue = run.then(noop, noop);
    return run;
  }

  /**
   * After a failed manifest write that was a no-space failure (ENOSPC, EDQUOT): writes a
   * new manifest holding the current version (synced, its name made durable, CURRENT
   * swapped to it), so the failed one is never written or synced again, and accepts edits
   * again. An edit that failed is not in the new manifest (its files are not live). Throws
   * what writing the new manifest throws (the set stays failed: call again); READ_ONLY
   * when the failure was not a no-space one. A no-op when the set has not failed.
   */
  resumeAfterNoSpace(): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.failure === undefined) return;
      if (!isNoSpace(this.failure)) throw this.readOnlyError();
      if (this.closeRequested !== undefined) {
        throw new KvError("CLOSED", `version set ${this.dir} is closed`);
      }
      try {
        await this.startManifest(undefined);
      } catch (err) {
        throw ioError(`write a new manifest of ${this.dir}`, err);
      }
      this.failure = undefined;
    });
    this.queue = run.then(noop, noop);
    return run;
  }

  /**
   * Numbers of the table files that some referenced version holds: the current version
   * and every older one a reader still refs. Any other table file that is not being
   * written may be deleted. Throws READ_ONLY once the set failed: an edit may then be on
   * disk without being current, so no file may be deleted until the store is reopened.
   */
  liveFileNumbers(): Set<number> {
    if (this.failure !== undefined) throw this.readOnlyError();
    const out = new Set<number>();
    for (const version of this.liveVersions) {
      for (const files of version.levels) for (const f of files) out.add(f.number);
    }
    return out;
  }

  /** Number of versions with references (the current one included). */
  get liveVersionCount(): number {
    return this.liveVersions.size;
  }

  /**
   * Waits for every queued logAndApply, then closes the manifest. Later logAndApply calls
   * throw CLOSED. Versions stay as they are (the current one keeps its reference).
   */
  close(): Promise<void> {
    if (this.closeRequested === undefined) {
      this.closeRequested = this.queue.then(async () => {
        const writer = this.manifest;
        this.manifest = undefined;
        if (writer === undefined) return;
        try {
          await writer.close();
        } catch (err) {
          throw ioError(`close manifest ${writer.file.path}`, err, writer.file.path);
        }
      });
    }
    return this.closeRequested;
  }

  // ---- internals ----

  private readOnlyError(): KvError {
    const failure = this.failure!;
    return new KvError(
      "READ_ONLY",
      `manifest of ${this.dir} failed earlier (${failure.message}); reopen the store`,
      failure.file === undefined ? { cause: failure } : { cause: failure, file: failure.file },
    );
  }

  private async applyNow(edit: VersionEdit): Promise<void> {
    if (this.failure !== undefined) throw this.readOnlyError();
    const writer = this.manifest;
    if (writer === undefined) throw new KvError("CLOSED", `version set ${this.dir} is closed`);

    // Validate and build before any I/O: a bad edit changes nothing.
    const filled = edit.clone();
    if (filled.formatVersion !== undefined && filled.formatVersion !== MANIFEST_FORMAT_VERSION) {
      throw new VersionEditError(`edit sets format version ${filled.formatVersion}`);
    }
    if (filled.comparatorName !== undefined && filled.comparatorName !== BYTEWISE_COMPARATOR) {
      throw new VersionEditError(`edit sets comparator ${filled.comparatorName}`);
    }
    filled.logNumber ??= this.logNumberValue;
    if (!Number.isSafeInteger(filled.logNumber) || filled.logNumber < this.logNumberValue) {
      throw new VersionEditError(
        `log number must not go backwards: ${this.logNumberValue} -> ${filled.logNumber}`,
      );
    }
    filled.lastSequence ??= this.lastSequenceValue;
    if (
      !Number.isSafeInteger(filled.lastSequence) ||
      filled.lastSequence < this.lastSequenceValue
    ) {
      throw new VersionEditError(
        `last sequence must not go backwards: ${this.lastSequenceValue} -> ${filled.lastSequence}`,
      );
    }
    const builder = new VersionBuilder(this.currentVersion);
    builder.apply(filled);
    const next = builder.build(this.releaseHook);
    for (const { file } of filled.addedFiles) this.markFileNumberUsed(file.number);
    this.markFileNumberUsed(filled.logNumber);
    if (filled.nextFileNumber !== undefined) this.markFileNumberUsed(filled.nextFileNumber - 1);
    filled.nextFileNumber = this.nextFileNumberValue;
    const record = encodeVersionEdit(filled);
    const counters = { logNumber: filled.logNumber, lastSequence: filled.lastSequence };

    try {
      if (writer.size >= this.rolloverAt) {
        await this.startManifest({ version: next, ...counters });
      } else {
        writer.appendRecord(record);
        await writer.sync();
      }
    } catch (err) {
      this.failure = ioError(`write manifest of ${this.dir}`, err, writer.file.path);
      throw this.failure;
    }

    this.logNumberValue = counters.logNumber;
    this.lastSequenceValue = Math.max(this.lastSequenceValue, counters.lastSequence);
    next.ref();
    this.liveVersions.add(next);
    const old = this.currentVersion;
    this.currentVersion = next;
    old.unref();
  }

  /** Marks the number of every numbered file in the directory used; returns the names. */
  private async skipUsedNumbers(): Promise<string[]> {
    let names: string[];
    try {
      names = await this.fs.list(this.dir);
    } catch (err) {
      throw ioError(`list ${this.dir}`, err, this.dir);
    }
    for (const name of names) {
      const parsed = parseFileName(name);
      if (parsed !== undefined && "number" in parsed) this.markFileNumberUsed(parsed.number);
    }
    return names;
  }

  /**
   * Writes a new manifest holding a snapshot (of `state`, default the current version and
   * counters) and makes CURRENT name it (manifest-writer.ts), then switches to it. The
   * previous manifest is then closed and deleted (failures to do so are ignored: it is
   * obsolete).
   */
  private async startManifest(
    state: { version: Version; logNumber: number; lastSequence: number } | undefined,
  ): Promise<void> {
    const number = this.newFileNumber();
    const snapshot = snapshotEdit((state?.version ?? this.currentVersion).allFiles(), {
      logNumber: state?.logNumber ?? this.logNumberValue,
      nextFileNumber: this.nextFileNumberValue,
      lastSequence: state?.lastSequence ?? this.lastSequenceValue,
    });
    const writer = await writeManifest(this.fs, this.dir, number, snapshot);
    const previous = this.manifest;
    const previousNumber = this.manifestNumberValue;
    this.manifest = writer;
    this.manifestNumberValue = number;
    this.rolloverAt = Math.max(this.maxManifestBytes, 2 * writer.size);
    if (previous !== undefined) {
      await previous.close().catch(noop);
      await this.fs.remove(manifestFilePath(this.dir, previousNumber)).catch(noop);
    }
  }

  /**
   * Writes the metadata of a checkpoint into `targetDir` (an existing directory holding the
   * checkpoint's table files, linked or copied by the caller): a manifest with one snapshot
   * edit listing `version`'s files and `lastSequence`, and CURRENT naming it
   * (manifest-writer.ts). Without `logNumber` the checkpoint has no logs: its log number
   * is past every file, so opening it replays nothing; with it, opening it replays the logs
   * from that number on (the caller copied one there). `version` must stay referenced
   * until this resolves.
   */
  async writeCheckpointManifest(
    targetDir: string,
    version: Version,
    lastSequence: number,
    logNumber?: number,
  ): Promise<void> {
    const number = this.newFileNumber();
    const snapshot = snapshotEdit(version.allFiles(), {
      logNumber: logNumber ?? number + 1,
      nextFileNumber: number + 2,
      lastSequence,
    });
    await installManifest(this.fs, targetDir, number, snapshot);
  }

  /**
   * Deletes every manifest and temp file among `names` (a listing taken before the current
   * manifest was written) other than the current manifest. Only called at create and
   * recover, when no rollover can be in progress. Failures are ignored.
   */
  private async removeStaleManifests(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const parsed = parseFileName(name);
      if (parsed === undefined || (parsed.type !== "manifest" && parsed.type !== "temp")) continue;
      if (parsed.number === this.manifestNumberValue) continue;
      await this.fs.remove(`${this.dir}/${name}`).catch(noop);
    }
  }
}
