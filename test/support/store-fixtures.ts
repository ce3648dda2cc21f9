/**
 * Store options shared by the tests that need data in several levels from a few hundred
 * small writes (the tools, the CLI inspect commands, the corruption matrix).
 */
import type { OpenOptions } from "../../src/index.js";

/**
 * 4 KiB memtables and 256-byte blocks (many tables and blocks), level 0 -> 1 at 3 files,
 * 2 KiB tables, level 1 at 8 KiB and each deeper level 4x larger; compactions inline.
 */
export const SMALL_LEVELS: OpenOptions = {
  writeBufferSize: 4096,
  blockSize: 256,
  l0CompactionTrigger: 3,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  levelSizeMultiplier: 4,
  compactionMode: "inline",
};
