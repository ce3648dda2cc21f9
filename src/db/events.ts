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
      /**
       * An append or sync of the write-ahead log failed (op "append", "sync"), or a log
       * switch did (op "switch": creating the next log or syncing the old one). The
       * writers concerned got the error; a "background-error" event follows when it
       * stopped writes.
       */
      readonly type: "log-failed";
      readonly op: "append" | "sync" | "switch";
      readonly code: string;
      readonly message: string;
      /** The log file. */
      readonly file: string | undefined;
    }
  | {
      /**
       * The store stopped accepting writes: a failed log append, sync or switch, flush,
       * manifest write, compactions that keep failing or a compaction that found the disk
       * full. `recoverable`: the disk (or quota) is full (code NO_SPACE) and writes resume
       * by themselves once space is freed (a "resumed" event); else they are refused until
       * the store is reopened. A fatal error replacing a recoverable one is reported too.
       */
      readonly type: "background-error";
      readonly code: string;
      readonly message: string;
      readonly recoverable: boolean;
    }
  | {
      /** An attempt to resume writes after a full disk failed (still no space): retried. */
      readonly type: "recovery-failed";
      readonly message: string;
      /** Attempts failed so far. */
      readonly attempts: number;
      readonly retryInMs: number;
    }
  | {
      /** Writes are accepted again after a recoverable background error (a full disk). */
      readonly type: "resumed";
      /** The error recovered from. */
      readonly code: string;
      readonly message: string;
      /** How long writes were refused. */
      readonly durationMs: number;
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
