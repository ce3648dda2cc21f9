/**
 * Telling the file operations a worker thread issued through the lockstep proxy apart from
 * the main thread's own: the host performs them on the main thread, so a file system's hook
 * (FaultInjectingFileSystem's onOp or injector) runs inside FileSystemHost's stack.
 */

/** True iff called (synchronously) from an operation FileSystemHost performs for a worker. */
export function issuedByWorker(): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 30;
  try {
    return new Error().stack?.includes("FileSystemHost.") === true;
  } finally {
    Error.stackTraceLimit = limit;
  }
}
