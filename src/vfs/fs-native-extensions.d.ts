/**
 * Minimal types for the parts of `fs-native-extensions` (1.5.x) that KV Engine uses.
 * On Linux the lock is an open-file-description lock (fcntl F_OFD_SETLK), elsewhere flock:
 * either way it belongs to the open file description, so a second open of the same file in
 * the same process cannot take it, and the kernel drops it when the process dies.
 */
declare module "fs-native-extensions" {
  export interface LockOptions {
    /** Take a shared lock instead of an exclusive one. Default false (exclusive). */
    shared?: boolean;
  }
  /**
   * Tries to lock `length` bytes at `offset` (0, 0: the whole file) without waiting.
   * Returns false when another holder has a conflicting lock; throws on other errors.
   */
  export function tryLock(
    fd: number,
    offset?: number,
    length?: number,
    opts?: LockOptions,
  ): boolean;
  export function tryLock(fd: number, opts?: LockOptions): boolean;
  /** Releases a lock taken with `tryLock` on the same range. */
  export function unlock(fd: number, offset?: number, length?: number): void;
}
