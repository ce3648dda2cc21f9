/**
 * A watch of etcd's Watch service as an async iterator of event batches, which survives
 * the failure of its stream or member.
 *
 * Contract:
 * - One Watch stream per watch, on the client's current endpoint; one watcher on it. Each
 *   batch is one response's events (whole revisions, in revision order), with the header
 *   revision; with `progressNotify`, a batch without events (`progress: true`) is a
 *   bookmark: every event at or below its revision came before it.
 * - Resuming: after the stream fails (a lost connection, a member stopped or killed, an
 *   UNAVAILABLE answer, the server closing it), or stays silent past `checkAfterMs` and
 *   then does not answer a progress request within `checkAfterMs` more (a paused or cut
 *   off member), the watcher is created again on the next endpoint with start revision =
 *   the last revision it delivered + 1 (for a watch "from now", the created answer's
 *   revision + 1), after a pause of 50 ms doubling to 1 s while attempts fail. Events at
 *   revisions already delivered are dropped, so none is repeated, and none is lost.
 *   Progress answers to the client's own liveness checks never move the start revision
 *   (etcd 3.4 answers them with revisions whose events may still be on their way).
 * - Ends: normally when `signal` fires, the loop is left, or the client is closed. With a
 *   KvClientError: serverCode "COMPACTED" (and `compactRevision`) when the revision to
 *   watch from was compacted; any answer other than UNAVAILABLE to the create request
 *   (INVALID_ARGUMENT, UNAUTHENTICATED, UNIMPLEMENTED...), as it came.
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import {
  type WatchRequest,
  WatchRequestSchema,
  type WatchResponse,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type Event, Event_EventType } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { CallRunner } from "../call-runner.js";
import { KvClientError } from "../kv-client-error.js";
import { compactedError } from "./etcd-errors.js";
import { etcdMethods } from "./etcd-methods.js";
import {
  type KeySelector,
  type KeyValueRecord,
  keyRange,
  kvRecord,
  revisionOf,
} from "./etcd-types.js";

export interface WatchOptions {
  /** The first revision to deliver (omitted or 0: changes after the watch is created). */
  startRevision?: number;
  /** Events carry the key's previous state. */
  prevKv?: boolean;
  /** Ask the server for progress bookmarks (empty batches) when the watch is idle. */
  progressNotify?: boolean;
  /** Ends the watch (the iteration ends without error). */
  signal?: AbortSignal;
  /**
   * Milliseconds without a message after which the stream is asked for progress; as long
   * again without an answer and it is given up for another endpoint. Default 5000.
   */
  checkAfterMs?: number;
}

export interface WatchEvent {
  type: "put" | "delete";
  /** The key after the change (for a delete: the key, and its revision of deletion). */
  kv: KeyValueRecord;
  /** With `prevKv`: the key before the change (undefined when it did not exist). */
  prevKv: KeyValueRecord | undefined;
}

export interface WatchBatch {
  /** The response header's revision. */
  revision: number;
  events: WatchEvent[];
  /** True for a progress bookmark (no events). */
  progress: boolean;
}

const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 1000;

export interface WatchHost {
  readonly calls: CallRunner;
  /** True once the client is closed. */
  readonly closed: boolean;
}

function eventOf(e: Event): WatchEvent {
  return {
    type: e.type === Event_EventType.DELETE ? "delete" : "put",
    kv: kvRecord(e.kv!),
    prevKv: e.prevKv === undefined ? undefined : kvRecord(e.prevKv),
  };
}

/** The batches of a watch of `selector` (see the module comment). */
export async function* watchBatches(
  host: WatchHost,
  selector: KeySelector,
  options: WatchOptions = {},
): AsyncGenerator<WatchBatch> {
  const range = keyRange(selector);
  let next = Number(revisionOf(options.startRevision, "startRevision"));
  const checkAfter = options.checkAfterMs ?? 5000;
  const signal = options.signal;
  const stopped = (): boolean => signal?.aborted === true || host.closed;
  const calls = host.calls;
  let endpoint = calls.current;
  let pause = FIRST_PAUSE_MS;
  const createRequest = (): WatchRequest =>
    create(WatchRequestSchema, {
      requestUnion: {
        case: "createRequest",
        value: {
          key: range.key,
          rangeEnd: range.rangeEnd,
          startRevision: BigInt(next),
          prevKv: options.prevKv === true,
          progressNotify: options.progressNotify === true,
        },
      },
    });
  const progressRequest = create(WatchRequestSchema, {
    requestUnion: { case: "progressRequest", value: {} },
  });
  for (;;) {
    if (stopped()) return;
    const context = { endpoint, path: etcdMethods.Watch.path, kind: "read" as const };
    let call: ReturnType<typeof calls.transport.bidiStream<WatchRequest, WatchResponse>>;
    try {
      call = calls.transport.bidiStream(endpoint, etcdMethods.Watch, context);
    } catch (err) {
      if (host.closed) return;
      throw calls.error(err, context);
    }
    const stream = call;
    let silentChecks = 0;
    let created = false;
    const timer = setInterval(() => {
      silentChecks++;
      if (silentChecks === 1 && created) stream.write(progressRequest);
      else if (silentChecks >= 2) stream.cancel();
    }, checkAfter);
    const onAbort = () => stream.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      stream.write(createRequest());
      for await (const r of stream) {
        silentChecks = 0;
        const revision = Number(r.header?.revision ?? 0n);
        if (r.created) {
          if (r.canceled) throw cancelError(endpoint, r);
          created = true;
          calls.current = endpoint;
          pause = FIRST_PAUSE_MS;
          if (next === 0) next = revision + 1;
          if (r.events.length === 0) continue;
        }
        if (r.canceled) throw cancelError(endpoint, r);
        if (r.watchId === -1n) continue; // an answer to the liveness check
        const events = r.events.filter((e) => Number(e.kv?.modRevision ?? 0n) >= next);
        if (events.length > 0) {
          next = Number(events[events.length - 1]!.kv!.modRevision) + 1;
          yield { revision, events: events.map(eventOf), progress: false };
        } else if (r.events.length === 0 && r.watchId >= 0n) {
          // A progress notification of this watcher: a bookmark.
          if (revision + 1 > next) next = revision + 1;
          if (options.progressNotify === true) yield { revision, events: [], progress: true };
        }
      }
    } catch (err) {
      if (stopped()) return;
      const e =
        err instanceof KvClientError && err.serverCode === "COMPACTED"
          ? err
          : calls.error(err, context);
      if (!resumable(e)) throw e;
    } finally {
      clearInterval(timer);
      signal?.removeEventListener("abort", onAbort);
      stream.cancel();
    }
    if (stopped()) return;
    endpoint = calls.nextEndpoint(endpoint);
    await sleep(pause, signal);
    pause = Math.min(LONGEST_PAUSE_MS, pause * 2);
  }
}

/**
 * Whether a watch whose stream failed with `e` goes on elsewhere: after any failure of the
 * connection or the member (not an answer), an UNAVAILABLE answer, or a CANCELLED one
 * (the member shutting down, or the client's own liveness check).
 */
function resumable(e: KvClientError): boolean {
  if (e.failure !== "answered") return true;
  return e.code === status.UNAVAILABLE || e.code === status.CANCELLED;
}

/** The error of a canceled watcher: COMPACTED with the compacted revision, or its reason. */
function cancelError(endpoint: string, r: WatchResponse): KvClientError {
  if (r.compactRevision > 0n) return compactedError(endpoint, Number(r.compactRevision));
  const reason = r.cancelReason === "" ? "the server canceled the watch" : r.cancelReason;
  return new KvClientError(status.FAILED_PRECONDITION, reason, { endpoint });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
