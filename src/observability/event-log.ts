/**
 * Store events as structured log lines (pino): one line per open (the recovery summary),
 * flush, compaction, write-stall state change, compaction failure and background error.
 * Nothing is logged per request. Levels: info for the normal life of the store, warn for
 * stalls that stop writes and failed compactions (retried), error for a background error
 * (writes refused until reopened). Fields are documented in docs/metrics.md ("Logs").
 */
import type { Logger } from "pino";
import type { StoreEvent, StoreEventListener } from "../db/kv-backend.js";

const round = (ms: number) => Math.round(ms * 10) / 10;

/** A store event listener writing each event to `logger` (see the module comment). */
export function eventLogger(logger: Logger): StoreEventListener {
  return (event: StoreEvent) => {
    switch (event.type) {
      case "open":
        logger.info(
          {
            event: "open",
            logsReplayed: event.logsReplayed,
            batchesReplayed: event.batchesReplayed,
            entriesReplayed: event.entriesReplayed,
            tornTailBytes: event.tornTailBytes,
            regionsDropped: event.regionsDropped,
            lastSequence: event.lastSequence,
            ms: round(event.durationMs),
          },
          "store opened",
        );
        if (event.tornTailBytes > 0) {
          logger.info(
            { event: "open", tornTailBytes: event.tornTailBytes },
            `recovery dropped a torn log tail of ${event.tornTailBytes} bytes (an append a crash interrupted, never acknowledged)`,
          );
        }
        if (event.regionsDropped > 0) {
          logger.warn(
            { event: "open", regionsDropped: event.regionsDropped },
            "recovery skipped damaged log regions (skipCorrupted)",
          );
        }
        break;
      case "flush":
        logger.info(
          {
            event: "flush",
            file: event.fileNumber,
            entries: event.entries,
            bytes: event.bytes,
            ms: round(event.durationMs),
          },
          "memtable flushed",
        );
        break;
      case "compaction":
        logger.info(
          {
            event: "compaction",
            level: event.level,
            outputLevel: event.outputLevel,
            trivialMove: event.trivialMove,
            manual: event.manual,
            inputFiles: event.inputFiles,
            outputFiles: event.outputFiles,
            bytesRead: event.bytesRead,
            bytesWritten: event.bytesWritten,
            ms: round(event.durationMs),
          },
          event.trivialMove ? "file moved down a level" : "compaction finished",
        );
        break;
      case "compaction-failed":
        logger.warn(
          {
            event: "compaction-failed",
            consecutiveFailures: event.consecutiveFailures,
            retryInMs: event.retryInMs,
            err: event.message,
          },
          "compaction failed",
        );
        break;
      case "stall": {
        const fields = {
          event: "stall",
          state: event.state,
          cause: event.cause,
          previousMs: round(event.previousMs),
        };
        if (event.state === "stopped") logger.warn(fields, "writes stopped");
        else if (event.state === "delayed") logger.info(fields, "writes delayed");
        else logger.info(fields, "writes resumed");
        break;
      }
      case "background-error":
        logger.error(
          { event: "background-error", code: event.code, err: event.message },
          "background failure: the store refuses writes until reopened",
        );
        break;
    }
  };
}
