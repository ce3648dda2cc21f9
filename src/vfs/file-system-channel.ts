/**
 * The channel over which a worker thread uses a FileSystem that lives on the main thread
 * (file-system-proxy.ts on the worker, file-system-host.ts on the main thread), and how a
 * thread gets a FileSystem at all (ThreadFileSystemSpec).
 *
 * The real file system is rebuilt on the other thread (`{ kind: "real" }`): node:fs works
 * there as well, and nothing is proxied. Any other file system (in-memory, fault-injecting,
 * test wrappers) exists only on the main thread, so the worker reaches it through a
 * MessagePort and a small SharedArrayBuffer of counters, in lockstep:
 *
 * - The proxy posts a message (a file-system request, or a message of its own for the
 *   host's user), increments TO_HOST and notifies; for a request it then blocks
 *   (Atomics.wait) until TO_PROXY reaches the count of its requests, and takes the reply
 *   with receiveMessageOnPort.
 * - The host blocks (Atomics.wait) until TO_HOST grows, takes the message with
 *   receiveMessageOnPort, performs a request on its FileSystem (awaiting it), posts the
 *   reply, increments TO_PROXY and notifies.
 * Neither port has a listener, so messages are seen only where the two sides take them.
 * The proxy's thread sets CLOSED when it exits (an uncaught error included), so that a host
 * waiting for it stops.
 *
 * Contract (what makes file-operation numbering deterministic with two threads): the two
 * threads alternate. The worker runs only between a reply and its next message; the main
 * thread, while it serves, runs only while the worker is blocked waiting for a reply. So the
 * order in which the main thread's FileSystem sees operations depends only on the main
 * thread's own order of events, as if the worker's code ran as a coroutine on it: the same
 * seed numbers the same operations whichever thread issues them.
 */

import type { MessagePort } from "node:worker_threads";

/** How a thread gets its FileSystem: rebuilt there, or proxied to the main thread's. */
export type ThreadFileSystemSpec =
  | { readonly kind: "real" }
  | {
      readonly kind: "proxy";
      /** The proxy's end of the channel (transferred to the thread). */
      readonly port: MessagePort;
      /** SIGNAL_SLOTS int32 counters (see the module comment). */
      readonly signals: SharedArrayBuffer;
    };

/** Messages the proxy posted. */
export const SIGNAL_TO_HOST = 0;
/** Replies the host posted. */
export const SIGNAL_TO_PROXY = 1;
/** 1 once the proxy's thread has exited. */
export const SIGNAL_CLOSED = 2;
export const SIGNAL_SLOTS = 3;

/** One file-system operation; `id` names a file (or lock) the host opened earlier. */
export type FileRequest =
  | { readonly op: "openReadable"; readonly path: string }
  | { readonly op: "createWritable"; readonly path: string }
  | { readonly op: "openWritable"; readonly path: string; readonly length: number | undefined }
  | { readonly op: "rename"; readonly path: string; readonly to: string }
  | { readonly op: "remove"; readonly path: string }
  | { readonly op: "link"; readonly path: string; readonly to: string }
  | { readonly op: "list"; readonly path: string }
  | { readonly op: "removeDir"; readonly path: string }
  | { readonly op: "mkdir"; readonly path: string }
  | { readonly op: "exists"; readonly path: string }
  | { readonly op: "fileSize"; readonly path: string }
  | { readonly op: "syncDir"; readonly path: string }
  | { readonly op: "lock"; readonly path: string }
  | { readonly op: "read"; readonly id: number; readonly position: number; readonly length: number }
  | { readonly op: "append"; readonly id: number; readonly data: Uint8Array }
  | { readonly op: "preallocate"; readonly id: number; readonly length: number }
  | { readonly op: "truncate"; readonly id: number; readonly length: number }
  | { readonly op: "datasync"; readonly id: number }
  | { readonly op: "datasyncSync"; readonly id: number }
  | { readonly op: "sync"; readonly id: number }
  | { readonly op: "close"; readonly id: number }
  | { readonly op: "release"; readonly id: number };

/** What the proxy posts: a request (answered with a FileReply) or a message of its own. */
export type ToHost =
  | { readonly kind: "fs"; readonly request: FileRequest }
  | { readonly kind: "message"; readonly message: unknown };

/**
 * The answer to a request. Opens answer { id, size }, `read` the bytes read, `append` and
 * `truncate` the file's new size, queries their result; the rest undefined.
 */
export type FileReply =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: SerializedFileError };

/** An error thrown by the host's FileSystem, as it crosses: its name, message and fields. */
export interface SerializedFileError {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly syscall: string | undefined;
  readonly path: string | undefined;
  readonly errno: number | undefined;
}

export function serializeFileError(err: unknown): SerializedFileError {
  if (!(err instanceof Error)) {
    return {
      name: "Error",
      message: String(err),
      code: undefined,
      syscall: undefined,
      path: undefined,
      errno: undefined,
    };
  }
  const e = err as NodeJS.ErrnoException;
  return {
    name: e.name,
    message: e.message,
    code: typeof e.code === "string" ? e.code : undefined,
    syscall: typeof e.syscall === "string" ? e.syscall : undefined,
    path: typeof e.path === "string" ? e.path : undefined,
    errno: typeof e.errno === "number" ? e.errno : undefined,
  };
}

/** An Error with the crossed error's name, message, code, syscall, path and errno. */
export function deserializeFileError(e: SerializedFileError): Error {
  const err: NodeJS.ErrnoException = new Error(e.message);
  err.name = e.name;
  if (e.code !== undefined) err.code = e.code;
  if (e.syscall !== undefined) err.syscall = e.syscall;
  if (e.path !== undefined) err.path = e.path;
  if (e.errno !== undefined) err.errno = e.errno;
  return err;
}
