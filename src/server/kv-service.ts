/**
 * kv.v1.KvService over one open store (a KvBackend). Each request is checked in full
 * (request-checks.ts) before it reaches the store, so a refused request stores nothing.
 * Writes use the store's durability setting: synced before the reply unless the store was
 * opened with `sync: false`.
 */
import type {
  handleServerStreamingCall,
  handleUnaryCall,
  ServerUnaryCall,
  sendUnaryData,
} from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import type { AbortSignalLike, BackendWriteOptions, KvBackend } from "../db/kv-backend.js";
import type {
  CompareAndSwapRequest,
  CompareAndSwapResponse,
  DeleteRequest,
  DeleteResponse,
  GetRequest,
  GetResponse,
  OpenSessionRequest,
  OpenSessionResponse,
  PutRequest,
  PutResponse,
  ScanRequest,
  ScanResponse,
  SessionCall,
  WriteRequest,
  WriteResponse,
} from "../proto/gen/kv/v1/kv_pb.js";
import { CallCancellation } from "./call-cancellation.js";
import { answerBeforeDeadline } from "./call-deadline.js";
import type { ServerLimits } from "./limits.js";
import { checkKey, checkValue } from "./request-checks.js";
import { RpcFailure, toServiceError } from "./rpc-status.js";
import { grpcJsScanOutput, type ScanCounters, serveScan } from "./scan-stream.js";

export interface KvServiceHandlers {
  Put: handleUnaryCall<PutRequest, PutResponse>;
  Get: handleUnaryCall<GetRequest, GetResponse>;
  Delete: handleUnaryCall<DeleteRequest, DeleteResponse>;
  Scan: handleServerStreamingCall<ScanRequest, ScanResponse>;
  Write: handleUnaryCall<WriteRequest, WriteResponse>;
  CompareAndSwap: handleUnaryCall<CompareAndSwapRequest, CompareAndSwapResponse>;
  OpenSession: handleUnaryCall<OpenSessionRequest, OpenSessionResponse>;
}

/** Tracks the calls being served, so shutdown can wait for them to settle. */
export type CallTracker = <T>(work: Promise<T>) => Promise<T>;

/** Told of every finished call: its method, final status and duration (for metrics). */
export type CallObserver = (method: KvMethod, code: status, durationMs: number) => void;

export type KvMethod = keyof KvServiceHandlers;

/**
 * The unary methods as transport-neutral operations: a request and the call's cancellation
 * signal in, the response out (or a thrown RpcFailure / KvError). Both transports (grpc-js
 * below, the lean path in lean-transport.ts) serve these.
 */
export function kvOperations(store: KvBackend, limits: ServerLimits) {
  /** A write's options: its signal and, on a backend that keeps sessions, its session. */
  const writeOptions = (
    session: SessionCall | undefined,
    signal: AbortSignalLike,
  ): BackendWriteOptions => {
    if (session === undefined) return { signal };
    if (store.openSession === undefined) {
      throw new RpcFailure(
        status.FAILED_PRECONDITION,
        "this server keeps no client sessions (a single-node server): send the write without one",
      );
    }
    const { id, seq, ackedBelow } = session;
    if (id === 0n || seq === 0n || ackedBelow === 0n || ackedBelow > seq + 1n) {
      throw new RpcFailure(
        status.INVALID_ARGUMENT,
        "session: id, seq and acked_below must be at least 1, and acked_below at most seq + 1",
      );
    }
    if (id > MAX_SAFE || seq > MAX_SAFE) {
      throw new RpcFailure(status.INVALID_ARGUMENT, "session: id and seq must be below 2^53");
    }
    return {
      signal,
      session: { id: Number(id), seq: Number(seq), ackedBelow: Number(ackedBelow) },
    };
  };
  return {
    Put: async (
      { key, value, session }: PutRequest,
      signal: AbortSignalLike,
    ): Promise<PutResponse> => {
      checkKey(key, limits);
      checkValue(value, limits);
      await store.put(key, value, writeOptions(session, signal));
      return { $typeName: "kv.v1.PutResponse" };
    },
    Get: async (
      { key, serializable }: GetRequest,
      signal: AbortSignalLike,
    ): Promise<GetResponse> => {
      checkKey(key, limits);
      const value = await store.get(key, serializable ? { serializable, signal } : { signal });
      return value === undefined
        ? { $typeName: "kv.v1.GetResponse", found: false, value: new Uint8Array(0) }
        : { $typeName: "kv.v1.GetResponse", found: true, value };
    },
    Delete: async (
      { key, session }: DeleteRequest,
      signal: AbortSignalLike,
    ): Promise<DeleteResponse> => {
      checkKey(key, limits);
      await store.delete(key, writeOptions(session, signal));
      return { $typeName: "kv.v1.DeleteResponse" };
    },
    Write: async (
      { mutations, session }: WriteRequest,
      signal: AbortSignalLike,
    ): Promise<WriteResponse> => {
      const options = writeOptions(session, signal);
      const batch = store.batch();
      mutations.forEach(({ op }, i) => {
        if (op.value?.session !== undefined) {
          throw new RpcFailure(
            status.INVALID_ARGUMENT,
            `mutations[${i}] carries a session: set it on the WriteRequest, not on a mutation`,
          );
        }
        switch (op.case) {
          case "put":
            checkKey(op.value.key, limits, `mutations[${i}].put.key`);
            checkValue(op.value.value, limits, `mutations[${i}].put.value`);
            batch.put(op.value.key, op.value.value);
            break;
          case "delete":
            checkKey(op.value.key, limits, `mutations[${i}].delete.key`);
            batch.delete(op.value.key);
            break;
          default:
            throw new RpcFailure(
              status.INVALID_ARGUMENT,
              `mutations[${i}] has no operation (set put or delete)`,
            );
        }
      });
      await store.write(batch, options);
      return { $typeName: "kv.v1.WriteResponse" };
    },
    CompareAndSwap: async (
      request: CompareAndSwapRequest,
      signal: AbortSignalLike,
    ): Promise<CompareAndSwapResponse> => {
      const { key, expected, update, session } = request;
      checkKey(key, limits);
      const options = writeOptions(session, signal);
      let expectedValue: Uint8Array | undefined;
      if (expected.case === "expectedValue") expectedValue = expected.value;
      else if (expected.case !== "expectAbsent" || !expected.value) {
        throw new RpcFailure(
          status.INVALID_ARGUMENT,
          "set expected_value, or expect_absent = true (the comparison)",
        );
      }
      let next: Uint8Array | undefined;
      if (update.case === "newValue") {
        checkValue(update.value, limits, "new_value");
        next = update.value;
      } else if (update.case !== "delete" || !update.value) {
        throw new RpcFailure(
          status.INVALID_ARGUMENT,
          "set new_value, or delete = true (the update)",
        );
      }
      const { applied, current } = await store.compareAndSwap(key, expectedValue, next, options);
      return {
        $typeName: "kv.v1.CompareAndSwapResponse",
        applied,
        found: current !== undefined,
        value: current ?? new Uint8Array(0),
      };
    },
    OpenSession: async (
      _request: OpenSessionRequest,
      signal: AbortSignalLike,
    ): Promise<OpenSessionResponse> => {
      if (store.openSession === undefined) {
        throw new RpcFailure(
          status.UNIMPLEMENTED,
          "this server keeps no client sessions (a single-node server): writes need no retry across members",
        );
      }
      const { id, ttlMs } = await store.openSession({ signal });
      return { $typeName: "kv.v1.OpenSessionResponse", id: BigInt(id), ttlMs: BigInt(ttlMs) };
    },
  };
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export type KvOperations = ReturnType<typeof kvOperations>;

/** The grpc-js handlers of kv.v1.KvService. */
export function kvServiceHandlers(
  store: KvBackend,
  limits: ServerLimits,
  counters: ScanCounters,
  track: CallTracker,
  observe: CallObserver = () => {},
  deadlineMarginMs = 0,
): KvServiceHandlers {
  const ops = kvOperations(store, limits);
  const unary = <Req, Res>(
    method: KvMethod,
    serve: (request: Req, signal: AbortSignalLike) => Promise<Res>,
  ) => unaryHandler(method, track, observe, serve, deadlineMarginMs);
  return {
    Put: unary("Put", ops.Put),
    Get: unary("Get", ops.Get),
    Delete: unary("Delete", ops.Delete),
    Write: unary("Write", ops.Write),
    CompareAndSwap: unary("CompareAndSwap", ops.CompareAndSwap),
    OpenSession: unary("OpenSession", ops.OpenSession),
    Scan: (call) => {
      const started = performance.now();
      void track(
        serveScan(store, grpcJsScanOutput(call), limits, counters, deadlineMarginMs).then((code) =>
          observe("Scan", code, performance.now() - started),
        ),
      );
    },
  };
}

/**
 * A unary handler around `serve`. `signal` fires when the call is cancelled (by the client,
 * its deadline or a disconnect): writes still queued in the engine then store nothing.
 */
function unaryHandler<Req, Res>(
  method: KvMethod,
  track: CallTracker,
  observe: CallObserver,
  serve: (request: Req, signal: AbortSignalLike) => Promise<Res>,
  deadlineMarginMs: number,
): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    const started = performance.now();
    const cancel = new CallCancellation();
    const onCancelled = () => cancel.cancel(new Error("the call was cancelled"));
    call.once("cancelled", onCancelled);
    const early = answerBeforeDeadline(cancel, grpcJsDeadline(call), deadlineMarginMs);
    void track(
      serve(call.request, early.signal)
        .then(
          (response) => {
            callback(null, response);
            return cancel.aborted ? status.CANCELLED : status.OK;
          },
          (err: unknown) => {
            const failure = toServiceError(err);
            callback(failure);
            return cancel.aborted ? status.CANCELLED : (failure.code ?? status.UNKNOWN);
          },
        )
        .then((code) => observe(method, code, performance.now() - started))
        .finally(() => {
          early.done();
          call.off("cancelled", onCancelled);
        }),
    );
  };
}

/** A grpc-js call's deadline as a Date.now() time (undefined: none). */
export function grpcJsDeadline(call: { getDeadline(): Date | number }): number | undefined {
  const d = call.getDeadline();
  const ms = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(ms) ? ms : undefined;
}
