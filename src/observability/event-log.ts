/**
 * Store events as structured log lines (pino): one line per open (the recovery summary),
 * flush, compaction, write-stall state change, compaction failure, log failure,
 * background error, failed recovery attempt and resumption of writes. Nothing is logged
 * per request. Levels: info for the normal life of the store (and writes resumed), warn
 * for stalls that stop writes, failed compactions (retried) and recovery attempts that
 * found no space yet, error for every failed log append, sync or switch and for a
 * background error (writes refused). Fields are documented in docs/metrics.md ("Logs").
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
      case "log-failed":
        logger.error(
          {
            event: "log-failed",
            op: event.op,
            code: event.code,
            file: event.file,
            err: event.message,
          },
          `write-ahead log ${event.op} failed`,
        );
        break;
      case "background-error":
        logger.error(
          {
            event: "background-error",
            code: event.code,
            recoverable: event.recoverable,
            err: event.message,
          },
          event.recoverable
            ? "the disk is full: the store refuses writes until space is freed, then resumes by itself"
            : "background failure: the store refuses writes until reopened",
        );
        break;
      case "recovery-failed":
        logger.warn(
          {
            event: "recovery-failed",
            attempts: event.attempts,
            retryInMs: event.retryInMs,
            err: event.message,
          },
          "still no space: writes stay refused",
        );
        break;
      case "resumed":
        logger.info(
          { event: "resumed", code: event.code, ms: round(event.durationMs) },
          "writes resumed",
        );
        break;
    }
  };
}
