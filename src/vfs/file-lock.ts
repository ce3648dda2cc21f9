/**
 * The kernel file lock behind RealFileSystem.lock: fs-native-extensions' open-file-
 * description lock (fcntl F_OFD_SETLK on Linux, flock elsewhere), loaded on first use.
 *
 * Loaded lazily because only the thread that opens a store takes its lock: the compaction
 * worker, which imports RealFileSystem too, never loads it. Loaded, when it can be, as the
 * package's prebuilt addon for this platform (`prebuilds/<platform>-<arch>/*.node`, the
 * layout of fs-native-extensions 1.x) with `process.dlopen`, because the package's own
 * entry point first loads its general addon resolver, which costs far more resident memory
 * per thread than the addon alone (docs/design.md, "Recovery"). When that file is missing
 * or does not load, the package's entry point is used as documented.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface FileLocking {
  /** Takes an exclusive lock on the whole file; false when another holder has it. */
  tryLock(fd: number): boolean;
  /** Releases the lock taken on fd. */
  unlock(fd: number): void;
}

/** The raw binding of fs-native-extensions: (fd, offset, length, exclusive); EAGAIN = held. */
interface RawBinding {
  tryLock(fd: number, offset: number, length: number, exclusive: boolean): void;
  unlock(fd: number, offset: number, length: number): void;
}

function isRawBinding(value: unknown): value is RawBinding {
  const b = value as Partial<RawBinding> | null;
  return typeof b?.tryLock === "function" && typeof b.unlock === "function";
}

function loadPrebuilt(): FileLocking | undefined {
  try {
    const require = createRequire(import.meta.url);
    const root = dirname(require.resolve("fs-native-extensions/package.json"));
    const addon = join(
      root,
      "prebuilds",
      `${process.platform}-${process.arch}`,
      "fs-native-extensions.node",
    );
    const mod: { exports: unknown } = { exports: {} };
    process.dlopen(mod, addon);
    const binding = mod.exports;
    if (!isRawBinding(binding)) return undefined;
    return {
      tryLock(fd) {
        try {
          binding.tryLock(fd, 0, 0, true);
          return true;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EAGAIN") return false;
          throw err;
        }
      },
      unlock: (fd) => binding.unlock(fd, 0, 0),
    };
  } catch {
    return undefined;
  }
}

let loaded: Promise<FileLocking> | undefined;

/** The lock functions, loaded on the first call. */
export function fileLocking(): Promise<FileLocking> {
  loaded ??= (async () => {
    const direct = process.env["KV_LOCK_VIA_PACKAGE"] ? undefined : loadPrebuilt();
    if (direct !== undefined) return direct;
    const pkg = await import("fs-native-extensions");
    return { tryLock: (fd) => pkg.tryLock(fd), unlock: (fd) => pkg.unlock(fd) };
  })();
  return loaded;
}
