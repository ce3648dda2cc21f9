/**
 * The server side of Scan: one store iterator (which pins the store's state when it is
 * created, so the scan reads one snapshot), rows packed into ScanResponse messages of
 * about `scanBatchBytes`, written with back-pressure.
 *
 * The call is seen through `ScanOutput`, which each transport provides (grpcJsScanOutput
 * here, the lean path's in lean-transport.ts).
 *
 * Contract:
 * - When `out.write()` returns false the loop waits for `out.drained()` before reading
 *   more rows, so a client that stops reading holds at most the messages the transport
 *   buffers (grpc-js keeps 16; the lean path one) plus HTTP/2 flow-control windows in
 *   server memory.
 * - Cancellation, an expired deadline, a disconnect or a server shutdown closes the
 *   iterator at once (releasing its view and pinned files), even while waiting to write.
 */
import { type ServerWritableStream, status } from "@grpc/grpc-js";
import type {
  AbortSignalLike,
  BackendIterator,
  BackendScanOptions,
  KvBackend,
} from "../db/kv-backend.js";
import type { KeyValue, ScanRequest, ScanResponse } from "../proto/gen/kv/v1/kv_pb.js";
import { CallCancellation } from "./call-cancellation.js";
import { answerBeforeDeadline } from "./call-deadline.js";
import type { ServerLimits } from "./limits.js";
import { checkRange } from "./request-checks.js";
import { toServiceError } from "./rpc-status.js";

/**
 * Rows asked of the iterator at a time (one promise per batch, not per row): FIRST_READ_ROWS
 * first, then as many as make about two response messages at the row size seen so far,
 * at most MAX_ROWS_PER_READ, so that a scan of large values holds a bounded number of
 * bytes before back-pressure can stop it (256 rows of 64 KiB values were 16 MiB per scan).
 */
const FIRST_READ_ROWS = 16;
const MAX_ROWS_PER_READ = 256;

/** Counters of the scans served, for tests and operators. */
export interface ScanCounters {
  /** Scans running now (their iterators are open). */
  active: number;
  /** Rows handed to the transport for sending, over all scans. */
  rowsSent: number;
  /** Bytes of keys and values handed to the transport for sending, over all scans. */
  bytesSent: number;
}

/** A Scan call as serveScan sees it. */
export interface ScanOutput {
  readonly request: ScanRequest;
  /** The call's deadline (a Date.now() time), undefined when it has none. */
  readonly deadline: number | undefined;
  /** Sends a message; false when the caller should wait for `drained` before the next. */
  write(msg: ScanResponse): boolean;
  /** Resolves when writing may go on, or at once when the call is gone (`signal` aborted). */
  drained(signal: AbortSignal): Promise<void>;
  /** Ends the call with OK. */
  end(): void;
  /** Ends the call with the status of `err`; returns that status. */
  fail(err: unknown): status;
  /** Calls `gone` (once) when the call is cancelled or closed; returns a function that stops that. */
  onGone(gone: () => void): () => void;
}

export type ScanCall = ServerWritableStream<ScanRequest, ScanResponse>;

/** A grpc-js server stream as a ScanOutput. */
export function grpcJsScanOutput(call: ScanCall): ScanOutput {
  const d = call.getDeadline();
  const deadline = d instanceof Date ? d.getTime() : d;
  return {
    request: call.request,
    deadline: Number.isFinite(deadline) ? deadline : undefined,
    write: (msg) => call.write(msg),
    drained: (signal) => drained(call, signal),
    end: () => call.end(),
    fail(err) {
      const failure = toServiceError(err);
      call.emit("error", failure);
      return failure.code ?? status.UNKNOWN;
    },
    onGone(gone) {
      call.once("cancelled", gone);
      call.once("close", gone);
      return () => {
        call.off("cancelled", gone);
        call.off("close", gone);
      };
    },
  };
}

/**
 * Serves one Scan call to its end (status sent) or cancellation. Never rejects; resolves
 * to the call's final status (CANCELLED when the client went away). With
 * `deadlineMarginMs` > 0 the store's wait (a replicated store's linearizable read) ends
 * before the call's deadline (call-deadline.ts).
 */
export async function serveScan(
  store: KvBackend,
  out: ScanOutput,
  limits: ServerLimits,
  counters: ScanCounters,
  deadlineMarginMs = 0,
): Promise<status> {
  const stop = new AbortController();
  const gone = new CallCancellation();
  const early = answerBeforeDeadline(gone, out.deadline, deadlineMarginMs);
  let it: BackendIterator | undefined;
  const unsubscribe = out.onGone(() => {
    stop.abort();
    gone.cancel(new Error("the call is gone"));
    it?.close();
  });
  try {
    it = store.iterator(iteratorOptions(out.request, early.signal));
  } catch (err) {
    unsubscribe();
    early.done();
    if (stop.signal.aborted) return status.CANCELLED;
    return out.fail(err);
  }
  counters.active++;
  try {
    await pump(it, out, limits, counters, stop.signal);
    if (stop.signal.aborted) return status.CANCELLED;
    out.end();
    return status.OK;
  } catch (err) {
    if (stop.signal.aborted) return status.CANCELLED;
    return out.fail(err);
  } finally {
    it.close();
    unsubscribe();
    early.done();
    counters.active--;
  }
}

function iteratorOptions(req: ScanRequest, signal: AbortSignalLike): BackendScanOptions {
  checkRange(req.startKey, req.endKey);
  const opts: BackendScanOptions = { signal };
  if (req.serializable) opts.serializable = true;
  if (req.startKey.length > 0) opts.gte = req.startKey;
  if (req.endKey.length > 0) opts.lt = req.endKey;
  // uint64: beyond 2^53 rows is as good as unbounded.
  if (req.limit > 0n) opts.limit = Number(req.limit);
  return opts;
}

async function pump(
  it: BackendIterator,
  out: ScanOutput,
  limits: ServerLimits,
  counters: ScanCounters,
  signal: AbortSignal,
): Promise<void> {
  let entries: KeyValue[] = [];
  let bytes = 0;
  const send = async (): Promise<void> => {
    const msg: ScanResponse = { $typeName: "kv.v1.ScanResponse", entries };
    counters.rowsSent += entries.length;
    counters.bytesSent += bytes;
    entries = [];
    bytes = 0;
    if (!out.write(msg)) await out.drained(signal);
  };
  let rowsPerRead = FIRST_READ_ROWS;
  let rowsRead = 0;
  let bytesRead = 0;
  for (;;) {
    if (signal.aborted) return;
    const asked = rowsPerRead;
    const rows = await it.nextBatch(asked);
    if (signal.aborted) return;
    for (const [key, value] of rows) {
      const size = key.length + value.length;
      bytesRead += size;
      if (entries.length > 0 && bytes + size > limits.scanBatchBytes) {
        await send();
        if (signal.aborted) return;
      }
      // A literal, not create(): the per-row cost is what a long scan pays.
      entries.push({ $typeName: "kv.v1.KeyValue", key, value });
      bytes += size;
    }
    if (rows.length < asked) break;
    rowsRead += rows.length;
    const rowBytes = Math.max(1, bytesRead / rowsRead);
    rowsPerRead = Math.min(
      MAX_ROWS_PER_READ,
      Math.max(1, Math.ceil((2 * limits.scanBatchBytes) / rowBytes)),
    );
  }
  if (entries.length > 0) await send();
}

/** Resolves on 'drain', or at once when the call is gone (`signal` aborted). */
function drained(call: ScanCall, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      call.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    call.on("drain", done);
    signal.addEventListener("abort", done);
  });
}
