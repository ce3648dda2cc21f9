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
 *   `maxManifestBytes`) is written as: create `MANIFEST-N`, append a snapshot edit (every
 *   file plus the counters), fdatasync it, fsync the directory (the manifest's name is
 *   durable before anything names it), write `N.dbtmp` holding "MANIFEST-N\n", fsync it,
 *   rename it to `CURRENT`, fsync the directory. Only then is the previous manifest
 *   obsolete and deleted. A crash at any point leaves CURRENT naming a complete manifest.
 *
 * Failures: if an append, sync, rename or directory fsync of the manifest protocol fails,
 * the outcome on disk is unknown (the edit may or may not be in the manifest; after a
 * failed fsync the kernel may have dropped the dirty pages and a retry could report a false
 * success). The set then turns failed: that call throws IO_ERROR, the current version is
 * unchanged, and every later `logAndApply` (and `liveFileNumbers`) throws READ_ONLY until
 * the store is reopened (`recover`). An edit that does not fit the current version is a
 * caller bug: it throws VersionEditError before any I/O and the set stays usable.
 *
 * Concurrency: `logAndApply` calls are queued and run one at a time in call order;
 * `close` runs after every call queued before it.
 *
 * File numbers: one counter for every numbered file (logs, tables, manifests, temp files).
 * `create` and `recover` list the directory and skip every number a file there already
 * has, so no number is ever reused, even one allocated but not yet recorded before a crash.
 */
import { ioError, KvError } from "../errors.js";
import type { FileSystem, ReadableFile, WritableFile } from "../vfs/file-system.js";
import { readLog } from "../wal/log-reader.js";
import { LogWriter } from "../wal/log-writer.js";
import {
  CURRENT_FILE,
  currentFilePath,
  manifestFileName,
  manifestFilePath,
  parseFileName,
  tempFilePath,
} from "./file-names.js";
import { NUM_LEVELS, Version, VersionEditError, type VersionReleaseHook } from "./version.js";
import { VersionBuilder } from "./version-builder.js";
import {
  BYTEWISE_COMPARATOR,
  decodeVersionEdit,
  encodeVersionEdit,
  MANIFEST_FORMAT_VERSION,
  VersionEdit,
} from "./version-edit.js";

/** Default manifest size that triggers a rollover to a new manifest (4 MiB). */
export const DEFAULT_MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** Largest CURRENT file accepted (it holds one short line). */
const MAX_CURRENT_BYTES = 4096;

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

interface Counters {
  nextFileNumber: number;
  lastSequence: number;
  logNumber: number;
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
    counters: Counters,
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
  static async storeExists(fs: FileSystem, dir: string): Promise<boolean> {
    const path = currentFilePath(dir);
    try {
      return await fs.exists(path);
    } catch (err) {
      throw ioError(`check for ${path}`, err, path);
    }
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
   * counters), makes CURRENT name it (module comment), and switches to it. The previous
   * manifest is then closed and deleted (failures to do so are ignored: it is obsolete).
   */
  private async startManifest(
    state: { version: Version; logNumber: number; lastSequence: number } | undefined,
  ): Promise<void> {
    const number = this.newFileNumber();
    const path = manifestFilePath(this.dir, number);
    const snapshot = new VersionEdit();
    snapshot.formatVersion = MANIFEST_FORMAT_VERSION;
    snapshot.comparatorName = BYTEWISE_COMPARATOR;
    snapshot.logNumber = state?.logNumber ?? this.logNumberValue;
    snapshot.nextFileNumber = this.nextFileNumberValue;
    snapshot.lastSequence = state?.lastSequence ?? this.lastSequenceValue;
    for (const added of (state?.version ?? this.currentVersion).allFiles()) {
      snapshot.addedFiles.push(added);
    }
    const record = encodeVersionEdit(snapshot);

    let file: WritableFile;
    try {
      file = await this.fs.createWritable(path);
    } catch (err) {
      throw ioError(`create manifest ${path}`, err, path);
    }
    const writer = new LogWriter(file);
    try {
      writer.appendRecord(record);
      await writer.sync();
      await this.syncDir();
      await this.setCurrent(number);
    } catch (err) {
      await writer.close().catch(noop);
      throw ioError(`write manifest ${path}`, err, path);
    }

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
   * edit listing `version`'s files and `lastSequence`, and CURRENT naming it, each synced,
   * then the directory. The checkpoint has no logs: its log number is past every file, so
   * opening it replays nothing. `version` must stay referenced until this resolves.
   */
  async writeCheckpointManifest(
    targetDir: string,
    version: Version,
    lastSequence: number,
  ): Promise<void> {
    const number = this.newFileNumber();
    const snapshot = new VersionEdit();
    snapshot.formatVersion = MANIFEST_FORMAT_VERSION;
    snapshot.comparatorName = BYTEWISE_COMPARATOR;
    snapshot.logNumber = number + 1;
    snapshot.nextFileNumber = number + 2;
    snapshot.lastSequence = lastSequence;
    for (const added of version.allFiles()) snapshot.addedFiles.push(added);
    const path = manifestFilePath(targetDir, number);
    let file: WritableFile;
    try {
      file = await this.fs.createWritable(path);
    } catch (err) {
      throw ioError(`create manifest ${path}`, err, path);
    }
    const writer = new LogWriter(file);
    try {
      writer.appendRecord(encodeVersionEdit(snapshot));
      await writer.sync();
    } finally {
      await writer.close().catch(noop);
    }
    await installCurrent(this.fs, targetDir, number);
  }

  /** Makes CURRENT name MANIFEST-`manifestNumber` (see installCurrent). */
  private setCurrent(manifestNumber: number): Promise<void> {
    return installCurrent(this.fs, this.dir, manifestNumber);
  }

  private async syncDir(): Promise<void> {
    try {
      await this.fs.syncDir(this.dir);
    } catch (err) {
      throw ioError(`sync directory ${this.dir}`, err, this.dir);
    }
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

// ---- recovery ----

function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}

/** The manifest number CURRENT names. CORRUPTION if CURRENT is missing or malformed. */
/**
 * Writes N.dbtmp holding "MANIFEST-N\n" in `dir`, fsyncs it, renames it to CURRENT and
 * fsyncs the directory: CURRENT changes atomically, and durably once this resolves.
 */
async function installCurrent(fs: FileSystem, dir: string, manifestNumber: number): Promise<void> {
  const tmp = tempFilePath(dir, manifestNumber);

  const content = new TextEncoder().encode(`${manifestFileName(manifestNumber)}\n`);
  let file: WritableFile;
  try {
    file = await fs.createWritable(tmp);
  } catch (err) {
    throw ioError(`create ${tmp}`, err, tmp);
  }
  try {
    file.append(content);
    await file.sync();
  } catch (err) {
    await file.close().catch(noop);
    throw ioError(`write ${tmp}`, err, tmp);
  }
  try {
    await file.close();
  } catch (err) {
    throw ioError(`close ${tmp}`, err, tmp);
  }
  const current = currentFilePath(dir);
  try {
    await fs.rename(tmp, current);
  } catch (err) {
    throw ioError(`rename ${tmp} to ${current}`, err, current);
  }
  try {
    await fs.syncDir(dir);
  } catch (err) {
    throw ioError(`sync directory ${dir}`, err, dir);
  }
}

/**
 * The manifest number CURRENT names (docs/format/manifest.md). Throws CORRUPTION naming
 * CURRENT when it is missing or malformed, IO_ERROR when it cannot be read.
 */
export async function readCurrent(fs: FileSystem, dir: string): Promise<number> {
  const path = currentFilePath(dir);
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    if (isNotFound(err)) {
      throw new KvError("CORRUPTION", `${path} is missing: no manifest can be found`, {
        file: path,
        cause: err,
      });
    }
    throw ioError(`open ${path}`, err, path);
  }
  let text: string;
  try {
    if (file.size > MAX_CURRENT_BYTES) {
      throw new KvError(
        "CORRUPTION",
        `${path} is malformed: ${file.size} bytes, at most ${MAX_CURRENT_BYTES} expected`,
        { file: path },
      );
    }
    const buf = new Uint8Array(file.size);
    let n: number;
    try {
      n = file.read(buf, 0);
    } catch (err) {
      throw ioError(`read ${path}`, err, path);
    }
    text = Buffer.from(buf.buffer, buf.byteOffset, n).toString("latin1");
  } finally {
    await file.close().catch(noop);
  }
  const m = /^MANIFEST-(\d{6,})\n$/.exec(text);
  const number = m === null ? Number.NaN : Number(m[1]);
  if (!Number.isSafeInteger(number)) {
    throw new KvError(
      "CORRUPTION",
      `${path} is malformed: expected one line "MANIFEST-NNNNNN", got ${JSON.stringify(text.slice(0, 64))}`,
      { file: path },
    );
  }
  return number;
}

/** A replayed manifest: its edits applied to a builder (whose version builds), counters. */
export interface ManifestReplay extends Counters {
  path: string;
  builder: VersionBuilder;
  edits: number;
  tornTailBytes: number;
}

/** Replays a manifest into a builder; CORRUPTION naming the manifest for any damage. */
async function replayManifest(
  fs: FileSystem,
  path: string,
  numLevels: number,
): Promise<ManifestReplay> {
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    if (isNotFound(err)) {
      throw new KvError("CORRUPTION", `${CURRENT_FILE} names ${path}, which does not exist`, {
        file: path,
        cause: err,
      });
    }
    throw ioError(`open manifest ${path}`, err, path);
  }
  return replayManifestFile(file, path, numLevels);
}

/**
 * Replays the open manifest `file` (at `path`) as recovery does, then closes it: strict
 * tail, the first edit a snapshot, the bytewise comparator, every edit applying, the
 * counters present and the version valid; CORRUPTION naming the manifest otherwise. Also
 * used by the read-only tools (src/tools/store-files.ts).
 */
export async function replayManifestFile(
  file: ReadableFile,
  path: string,
  numLevels: number,
): Promise<ManifestReplay> {
  const corrupt = (offset: number, message: string, cause?: unknown): KvError =>
    new KvError(
      "CORRUPTION",
      `${path}: record at offset ${offset}: ${message}`,
      cause === undefined ? { file: path } : { file: path, cause },
    );
  const builder = new VersionBuilder(Version.empty(numLevels));
  let edits = 0;
  let logNumber: number | undefined;
  let nextFileNumber: number | undefined;
  let lastSequence: number | undefined;
  let tornTailBytes: number;
  try {
    // strictTail: every edit was synced before anything relied on it, so only an
    // interrupted append (the file ending inside the last record) may be dropped; a
    // complete last record that fails its checksum is damage, not a torn write.
    const report = await readLog(
      file,
      "tolerateTornTail",
      (payload, offset) => {
        const edit = decodeVersionEdit(payload, path, offset);
        if (edits === 0 && edit.formatVersion === undefined) {
          throw corrupt(offset, "the first edit is not a snapshot (it has no format version)");
        }
        if (edit.comparatorName !== undefined && edit.comparatorName !== BYTEWISE_COMPARATOR) {
          throw corrupt(
            offset,
            `written with comparator ${JSON.stringify(edit.comparatorName)}, ` +
              `this build has only ${JSON.stringify(BYTEWISE_COMPARATOR)}`,
          );
        }
        try {
          builder.apply(edit);
        } catch (err) {
          if (!(err instanceof VersionEditError)) throw err;
          throw corrupt(offset, `the edit does not apply: ${err.message}`, err);
        }
        logNumber = edit.logNumber ?? logNumber;
        nextFileNumber = edit.nextFileNumber ?? nextFileNumber;
        lastSequence = edit.lastSequence ?? lastSequence;
        edits++;
      },
      { strictTail: true },
    );
    tornTailBytes = report.tornTailBytes;
  } finally {
    await file.close().catch(noop);
  }
  if (edits === 0) {
    throw new KvError("CORRUPTION", `${path}: the manifest holds no edit`, { file: path });
  }
  if (logNumber === undefined || nextFileNumber === undefined || lastSequence === undefined) {
    const missing = [
      logNumber === undefined ? "log number" : "",
      nextFileNumber === undefined ? "next file number" : "",
      lastSequence === undefined ? "last sequence" : "",
    ].filter((s) => s !== "");
    throw new KvError("CORRUPTION", `${path}: the manifest lacks ${missing.join(", ")}`, {
      file: path,
    });
  }
  // Check the level invariants now, so that the constructor cannot fail later.
  try {
    builder.build();
  } catch (err) {
    if (!(err instanceof VersionEditError)) throw err;
    throw new KvError("CORRUPTION", `${path}: the recorded version is invalid: ${err.message}`, {
      file: path,
      cause: err,
    });
  }
  return { path, builder, edits, tornTailBytes, logNumber, nextFileNumber, lastSequence };
}
