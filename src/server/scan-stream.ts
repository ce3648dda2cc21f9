/**
 * The server side of Scan: one store iterator (which pins the store's state when it is
 * created, so the scan reads one snapshot), rows packed into ScanResponse messages of
 * about `scanBatchBytes`, written with back-pressure.
 *
 * Contract:
 * - When `call.write()` returns false the loop waits for 'drain' before reading more rows,
 *   so a client that stops reading holds at most the stream's buffered messages (grpc-js
 *   keeps 16) plus HTTP/2 flow-control windows in server memory.
 * - Cancellation, an expired deadline, a disconnect or a server shutdown closes the
 *   iterator at once (releasing its view and pinned files), even while waiting to write.
 */
import { type ServerWritableStream, status } from "@grpc/grpc-js";
import type { BackendIterator, BackendScanOptions, KvBackend } from "../db/kv-backend.js";
import type { KeyValue, ScanRequest, ScanResponse } from "../proto/gen/kv/v1/kv_pb.js";
import type { ServerLimits } from "./limits.js";
import { checkRange } from "./request-checks.js";
import { toServiceError } from "./rpc-status.js";

/** Rows asked of the iterator at a time (one promise per batch, not per row). */
const ROWS_PER_READ = 256;

/** Counters of the scans served, for tests and operators. */
export interface ScanCounters {
  /** Scans running now (their iterators are open). */
  active: number;
  /** Rows handed to grpc-js for sending, over all scans. */
  rowsSent: number;
  /** Bytes of keys and values handed to grpc-js for sending, over all scans. */
  bytesSent: number;
}

export type ScanCall = ServerWritableStream<ScanRequest, ScanResponse>;

/**
 * Serves one Scan call to its end (status sent) or cancellation. Never rejects; resolves
 * to the call's final status (CANCELLED when the client went away).
 */
export async function serveScan(
  store: KvBackend,
  call: ScanCall,
  limits: ServerLimits,
  counters: ScanCounters,
): Promise<status> {
  let it: BackendIterator;
  try {
    it = store.iterator(iteratorOptions(call.request));
  } catch (err) {
    const failure = toServiceError(err);
    call.emit("error", failure);
    return failure.code ?? status.UNKNOWN;
  }
  counters.active++;
  const stop = new AbortController();
  const onGone = () => {
    stop.abort();
    it.close();
  };
  call.once("cancelled", onGone);
  call.once("close", onGone);
  try {
    await pump(it, call, limits, counters, stop.signal);
    if (stop.signal.aborted) return status.CANCELLED;
    call.end();
    return status.OK;
  } catch (err) {
    if (stop.signal.aborted) return status.CANCELLED;
    const failure = toServiceError(err);
    call.emit("error", failure);
    return failure.code ?? status.UNKNOWN;
  } finally {
    it.close();
    call.off("cancelled", onGone);
    call.off("close", onGone);
    counters.active--;
  }
}

function iteratorOptions(req: ScanRequest): BackendScanOptions {
  checkRange(req.startKey, req.endKey);
  const opts: BackendScanOptions = {};
  if (req.startKey.length > 0) opts.gte = req.startKey;
  if (req.endKey.length > 0) opts.lt = req.endKey;
  // uint64: beyond 2^53 rows is as good as unbounded.
  if (req.limit > 0n) opts.limit = Number(req.limit);
  return opts;
}

async function pump(
  it: BackendIterator,
  call: ScanCall,
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
    if (!call.write(msg)) await drained(call, signal);
  };
  for (;;) {
    if (signal.aborted) return;
    const rows = await it.nextBatch(ROWS_PER_READ);
    if (signal.aborted) return;
    for (const [key, value] of rows) {
      const size = key.length + value.length;
      if (entries.length > 0 && bytes + size > limits.scanBatchBytes) {
        await send();
        if (signal.aborted) return;
      }
      // A literal, not create(): the per-row cost is what a long scan pays.
      entries.push({ $typeName: "kv.v1.KeyValue", key, value });
      bytes += size;
    }
    if (rows.length < ROWS_PER_READ) break;
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
