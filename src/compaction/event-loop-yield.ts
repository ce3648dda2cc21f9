/**
 * Yield points of the work that runs on an event loop for a long time (compactions,
 * level-0 table writes): every YIELD_EVERY entries it awaits yieldToEventLoop, so that on
 * the main thread reads, writes and timers keep being served, and on the worker thread
 * messages (aborts, flushes) get in.
 */

/** Entries between yields to the event loop. */
export const YIELD_EVERY = 2000;

/** Resolves in the event loop's next check phase (setImmediate): pending I/O callbacks run first. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
