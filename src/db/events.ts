/**
 * Store events: what the store's background work did, for logs and metrics (RocksDB calls
 * the same idea an EventListener). Pass `onEvent` to `open`; it is called synchronously,
 * on the event-loop thread, right after the thing happened. A listener must be quick and
 * must not call back into the store synchronously; what it throws is ignored (an event
 * listener can never break a write or a flush).
 *
 * Stalls are reported as changes of the write-stall state, not per delayed write:
 * "normal" -> "delayed" (level 0 reached l0SlowdownTrigger: each write group waits 1 ms)
 * -> "stopped" (writes wait for a flush or a compaction) and back, each change once.
 */

/** Whether writes are held back, and why. */
export type StallState = "normal" | "delayed" | "stopped";

/** Why writes are held back: the memtables are full, or level 0 has too many files. */
export type StallCause = "memtable" | "level0";

export type StoreEvent =
  | {
      readonly type: "open";
      /**
       * Logs replayed, batches and entries they held, bytes of torn tails dropped (the end
       * of an append a crash interrupted: never acknowledged).
       */
      readonly logsReplayed: number;
      readonly batchesReplayed: number;
      readonly entriesReplayed: number;
      readonly tornTailBytes: number;
      /** Damaged regions skipped before a log's end (skipCorrupted mode only; torn tails not counted). */
      readonly regionsDropped: number;
      readonly lastSequence: number;
      readonly durationMs: number;
    }
  | {
      readonly type: "flush";
      readonly fileNumber: number;
      readonly entries: number;
      /** Bytes of the level-0 table written. */
      readonly bytes: number;
      readonly durationMs: number;
    }
  | {
      readonly type: "compaction";
      /** The level compacted, and where its output went. */
      readonly level: number;
      readonly outputLevel: number;
      /** True for a move of one file to the next level without rewriting it. */
      readonly trivialMove: boolean;
      /** True when started by compactRange. */
      readonly manual: boolean;
      readonly inputFiles: number;
      readonly outputFiles: number;
      readonly bytesRead: number;
      readonly bytesWritten: number;
      readonly durationMs: number;
    }
  | {
      readonly type: "compaction-failed";
      readonly message: string;
      readonly consecutiveFailures: number;
      /** Milliseconds until the retry, or undefined when none is scheduled. */
      readonly retryInMs: number | undefined;
    }
  | {
      readonly type: "stall";
      readonly state: StallState;
      /** What holds writes back (undefined when the state is "normal"). */
      readonly cause: StallCause | undefined;
      /** How long the previous state lasted. */
      readonly previousMs: number;
    }
  | {
      /** The store stopped accepting writes (a failed flush, manifest write or compactions). */
      readonly type: "background-error";
      readonly code: string;
      readonly message: string;
    };

export type StoreEventListener = (event: StoreEvent) => void;

/** Calls `listener` with `event`, ignoring whatever it throws. */
export function emitEvent(listener: StoreEventListener | undefined, event: StoreEvent): void {
  if (listener === undefined) return;
  try {
    listener(event);
  } catch {
    // A listener must not break the store (see the module comment).
  }
}
