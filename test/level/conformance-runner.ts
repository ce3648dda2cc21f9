/**
 * Runs the conformance suite shipped with abstract-level (its `abstract-level/test` export,
 * written for the `tape` harness) against KvEngineLevel and prints TAP on stdout.
 * conformance.test.ts runs this file in a child process and turns the TAP into node:test
 * results. Every database the suite makes gets a fresh directory.
 *
 * By default the directories are on the engine's in-memory file system, with the store's
 * default options (durable writes): the suite opens and closes well over a thousand
 * databases, and on a busy disk their fsyncs dominate its time. KV_LEVEL_FS=real runs it
 * on the real file system in a temporary directory instead (kv-engine-level.test.ts covers
 * the real file system too).
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { MemoryFileSystem, type OpenOptions } from "../../src/index.js";
import { KvEngineLevel, type KvEngineLevelOptions } from "../../src/level/index.js";
import { tempDir } from "../support/temp-dir.js";

type TestFn = (name: string, fn: (t: object) => unknown) => void;
interface Tape extends TestFn {
  onFinish(fn: () => void): void;
}
interface SuiteOptions {
  test: Tape;
  factory: (options?: KvEngineLevelOptions<unknown, unknown>) => KvEngineLevel<unknown, unknown>;
}

const require = createRequire(import.meta.url);
const tape = require("tape") as Tape;
const suite = require("abstract-level/test") as (options: SuiteOptions) => void;

const real = process.env["KV_LEVEL_FS"] === "real";
const root = real ? tempDir("kv-level-") : undefined;
const memory = real ? undefined : new MemoryFileSystem();
let next = 0;

/**
 * Passes the file system at open without adding it to the options the suite sees (its
 * postopen hook tests compare them).
 */
class SuiteLevel extends KvEngineLevel<unknown, unknown> {
  override async _open(options: OpenOptions): Promise<void> {
    return super._open(memory === undefined ? options : { ...options, fs: memory });
  }
}

suite({
  test: tape,
  factory: (options) => new SuiteLevel(join(root?.path ?? "/level", String(next++)), options),
});

tape.onFinish(() => root?.remove());
