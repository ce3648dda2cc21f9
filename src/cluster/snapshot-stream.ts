/**
 * Snapshots over raft.v1.Peer/Snapshot, one per call on a connection of its own (so that
 * message batches and heartbeats never queue behind it): the sender's side
 * (`sendSnapshotStream`) and the receiver's (`receiveSnapshotStream`).
 *
 * Back-pressure end to end: the sender reads the next chunk from its files only once the
 * previous one was taken by HTTP/2 flow control; the receiver takes a chunk from the
 * network only after its SnapshotSink.write resolved (the lean server grants the stream
 * window only as the handler reads), so a slow disk on the receiver slows the sender's
 * reads. A transfer making no progress for `stallMs` is abandoned.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { KvError } from "../errors.js";
import type { RequestStream } from "../grpc/server-call.js";
import { GrpcError, Status } from "../grpc/status.js";
import { type SnapshotChunk, SnapshotChunkSchema } from "../proto/gen/raft/v1/peer_pb.js";
import { decodeMessage, encodeMessage } from "../raft/codec.js";
import type { MemberId } from "../replication/members.js";
import type { OutgoingSnapshot, PeerEnvelope, PeerHandler } from "../replication/peer-transport.js";
import {
  callStatus,
  dial,
  openCall,
  PeerCallError,
  type PeerTlsOptions,
  writeMessage,
} from "./peer-call.js";

export const SNAPSHOT_PATH = "/raft.v1.Peer/Snapshot";

export function encodeChunk(c: Partial<Omit<SnapshotChunk, "$typeName">>): Uint8Array {
  return toBinary(SnapshotChunkSchema, {
    $typeName: "raft.v1.SnapshotChunk",
    clusterId: c.clusterId ?? 0n,
    from: c.from ?? 0n,
    to: c.to ?? 0n,
    message: c.message ?? new Uint8Array(0),
    file: c.file ?? "",
    data: c.data ?? new Uint8Array(0),
  });
}

export function decodeChunk(bytes: Uint8Array): SnapshotChunk {
  return fromBinary(SnapshotChunkSchema, bytes);
}

export interface SnapshotSendOptions {
  readonly address: string;
  readonly tls: PeerTlsOptions | undefined;
  readonly envelope: PeerEnvelope;
  readonly chunkBytes: number;
  readonly stallMs: number;
  /** Ends the transfer (the transport closes). */
  readonly signal: AbortSignal;
}

/** Streams `snap`; resolves once the receiver stored and stepped it (see the module comment). */
export async function sendSnapshotStream(
  snap: OutgoingSnapshot,
  o: SnapshotSendOptions,
): Promise<void> {
  const session = dial(o.address, o.tls);
  session.on("error", () => {});
  const stream = openCall(session, SNAPSHOT_PATH);
  const status = callStatus(stream);
  let progress = Date.now();
  let failure: Error | undefined;
  const stop = (err: Error) => {
    failure ??= err;
    stream.close();
    session.destroy();
  };
  const watchdog = setInterval(
    () => {
      if (Date.now() - progress > o.stallMs)
        stop(new Error(`the snapshot stream made no progress for ${o.stallMs} ms`));
    },
    Math.max(10, Math.min(1000, o.stallMs / 4)),
  );
  watchdog.unref();
  const onAbort = () => stop(new Error("the transport closed"));
  o.signal.addEventListener("abort", onAbort);
  // The receiver may end the call early (refusal, failed write): stop sending then.
  let ended = false;
  void status.then(() => {
    ended = true;
  });
  const write = async (chunk: Uint8Array) => {
    if (ended || failure !== undefined) return;
    await writeMessage(stream, chunk);
    progress = Date.now();
  };
  try {
    if (o.signal.aborted) throw new Error("the transport closed");
    await write(
      encodeChunk({
        clusterId: BigInt(o.envelope.clusterId),
        from: BigInt(o.envelope.from),
        to: BigInt(o.envelope.to),
        message: encodeMessage(snap.message),
      }),
    );
    for (const f of snap.files) {
      if (f.size === 0) await write(encodeChunk({ file: f.name }));
      for (let offset = 0; offset < f.size && !ended && failure === undefined; ) {
        const data = await snap.read(f.name, offset, Math.min(o.chunkBytes, f.size - offset));
        if (data.length === 0)
          throw new Error(`snapshot file ${f.name} ends at ${offset}, not ${f.size}`);
        progress = Date.now();
        await write(encodeChunk({ file: f.name, data }));
        offset += data.length;
      }
    }
    if (!ended && failure === undefined) stream.end();
    const s = await status;
    if (failure !== undefined) throw failure;
    if (s.code !== Status.OK) throw new PeerCallError(s.code, s.message);
  } catch (err) {
    stop(err instanceof Error ? err : new Error(String(err)));
    throw failure ?? err;
  } finally {
    clearInterval(watchdog);
    o.signal.removeEventListener("abort", onAbort);
    session.close();
  }
}

/**
 * The receiver's side of one Snapshot call: the first chunk's envelope and message go to
 * `handler.receiveSnapshot` (its throw ends the call with its status), every later chunk
 * to the sink, awaited; the end of the client's stream finishes the sink. Any failure
 * aborts the sink. Resolves with the bytes received.
 */
export async function receiveSnapshotStream(
  requests: RequestStream<SnapshotChunk>,
  handler: PeerHandler | undefined,
): Promise<number> {
  const first = await requests.next();
  if (first === undefined) throw new GrpcError(Status.INVALID_ARGUMENT, "empty snapshot stream");
  if (handler === undefined)
    throw new GrpcError(Status.UNAVAILABLE, "this member is not running yet");
  const envelope: PeerEnvelope = {
    clusterId: Number(first.clusterId),
    from: Number(first.from) as MemberId,
    to: Number(first.to) as MemberId,
  };
  let message: ReturnType<typeof decodeMessage>;
  try {
    message = decodeMessage(first.message);
  } catch (err) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `the snapshot stream's message does not decode: ${(err as Error).message}`,
    );
  }
  const sink = await handler.receiveSnapshot(envelope, message);
  let bytes = 0;
  try {
    for (;;) {
      const chunk = await requests.next();
      if (chunk === undefined) break;
      if (chunk.file === "")
        throw new KvError("INVALID_ARGUMENT", "a snapshot chunk names no file");
      await sink.write(chunk.file, chunk.data);
      bytes += chunk.data.length;
    }
    await sink.finish();
    return bytes;
  } catch (err) {
    await sink.abort(err);
    throw err;
  }
}
