/**
 * The Raft core's logger: four levels, one string per line. The core logs state changes
 * (elections, role changes, configuration changes, snapshots, repair) at info, refusals
 * and anomalies at warn/error, and per-message detail at debug. It never builds a debug
 * line on the per-entry path. A pino logger fits as is (`logger: pino()`).
 */
export interface RaftLogger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

function ignore(_message: string): void {}

/** Discards everything (the default). */
export const SILENT_LOGGER: RaftLogger = {
  debug: ignore,
  info: ignore,
  warn: ignore,
  error: ignore,
};
