/**
 * Options of the table writer (TableBuilder), with their defaults and validation.
 * Readers need none of them: everything a reader needs is in the file.
 */
import { KvError } from "../errors.js";
import type { CompressionName } from "./format.js";

export interface TableOptions {
  /**
   * Target size of a data block before compression, in bytes (default 4096). A block is
   * closed as soon as its estimated size reaches this; a single larger entry makes one
   * larger block.
   */
  blockSize?: number;
  /** Entries between restart points in data blocks (default 16). */
  restartInterval?: number;
  /** Bloom filter bits per distinct user key (default 10, about 1 % false positives); 0: no filter. */
  bloomBitsPerKey?: number;
  /**
   * "lz4" or "deflate": store each data block compressed with that codec when that shrinks
   * it by at least 12.5 % (else uncompressed; block-codec.ts). Default "none".
   */
  compression?: CompressionName;
}

export const DEFAULT_BLOCK_SIZE = 4096;
export const DEFAULT_RESTART_INTERVAL = 16;
export const DEFAULT_BLOOM_BITS_PER_KEY = 10;

export type ResolvedTableOptions = Required<TableOptions>;

function invalid(message: string): KvError {
  return new KvError("INVALID_ARGUMENT", `table options: ${message}`);
}

/** The options with defaults filled in; throws INVALID_ARGUMENT for a bad value. */
export function resolveTableOptions(options: TableOptions = {}): ResolvedTableOptions {
  const blockSize = options.blockSize ?? DEFAULT_BLOCK_SIZE;
  const restartInterval = options.restartInterval ?? DEFAULT_RESTART_INTERVAL;
  const bloomBitsPerKey = options.bloomBitsPerKey ?? DEFAULT_BLOOM_BITS_PER_KEY;
  const compression = options.compression ?? "none";
  if (!Number.isSafeInteger(blockSize) || blockSize < 1 || blockSize > 2 ** 30) {
    throw invalid(`blockSize must be an integer in [1, 2^30], got ${blockSize}`);
  }
  if (!Number.isSafeInteger(restartInterval) || restartInterval < 1) {
    throw invalid(`restartInterval must be an integer >= 1, got ${restartInterval}`);
  }
  if (!(bloomBitsPerKey >= 0 && bloomBitsPerKey <= 1000)) {
    throw invalid(`bloomBitsPerKey must be a number in [0, 1000], got ${bloomBitsPerKey}`);
  }
  if (compression !== "none" && compression !== "deflate" && compression !== "lz4") {
    throw invalid(`compression must be "none", "lz4" or "deflate", got ${String(compression)}`);
  }
  return { blockSize, restartInterval, bloomBitsPerKey, compression };
}
