/**
 * ClientStreamCall (src/grpc/http2/client-stream.ts): against the real peer service (the
 * lean server, plaintext and TLS: batches delivered, a refusal's status, a ping's round
 * trip) and against a hand-driven HTTP/2 server: the request HEADERS and SETTINGS, the
 * SETTINGS ACK, stream and connection send windows (a write waits, then drains),
 * splitting at MAX_FRAME_SIZE, socket back-pressure, PING answers, trailers-only and
 * trailers statuses, RST_STREAM / GOAWAY / a cut socket -> UNAVAILABLE, close().
 */
import assert from "node:assert/strict";
import { createServer, connect as netConnect, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { encodeBatch } from "../../src/cluster/batch-codec.js";
import { dialSocket, type PeerTlsOptions } from "../../src/cluster/peer-call.js";
import { MESSAGES_PATH } from "../../src/cluster/peer-link.js";
import { GrpcPeerTransport } from "../../src/cluster/peer-transport.js";
import { KvError } from "../../src/errors.js";
import { type CallStatus, ClientStreamCall } from "../../src/grpc/http2/client-stream.js";
import { FrameReader } from "../../src/grpc/http2/frame-reader.js";
import * as h2 from "../../src/grpc/http2/frames.js";
import { HpackDecoder } from "../../src/grpc/http2/hpack-decoder.js";
import { encodeHeaderBlock } from "../../src/grpc/http2/hpack-encoder.js";
import { PREFIX_BYTES } from "../../src/grpc/message-framing.js";
import { Status } from "../../src/grpc/status.js";
import { encodeMessage } from "../../src/raft/codec.js";
import type { Message } from "../../src/raft/types.js";
import { h2frame } from "../support/raw-h2.js";
import { tempDir } from "../support/temp-dir.js";
import { makeTlsFiles } from "../support/tls-certs.js";
import { waitFor } from "../support/wait-for.js";

/** Waits until `cond` holds (its source names it in the failure). */
const until = (cond: () => boolean, limitMs?: number) => waitFor(cond, String(cond), limitMs);

const CLUSTER = 0xc1;

function heartbeat(from: number, to: number, commit: number): Message {
  return {
    type: "heartbeat",
    to,
    from,
    term: 1,
    logTerm: 0,
    index: 0,
    entries: [],
    commit,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: new Uint8Array(0),
  };
}

/** A framed MessageBatch, as PeerLink writes it. */
function framedBatch(clusterId: number, commits: number[]): Buffer {
  const out = encodeBatch(
    {
      clusterId,
      from: 1,
      to: 2,
      messages: commits.map((c) => encodeMessage(heartbeat(1, 2, c))),
    },
    PREFIX_BYTES,
  );
  out[0] = 0;
  out.writeUInt32BE(out.length - PREFIX_BYTES, 1);
  return out;
}

/** A call's status and drains, recorded. */
function recorder() {
  const r = {
    drains: 0,
    status: undefined as CallStatus | undefined,
    handlers: {
      drain: () => {
        r.drains++;
      },
      status: (s: CallStatus) => {
        assert.equal(r.status, undefined, "status called twice");
        r.status = s;
      },
    },
  };
  return r;
}

describe("against the peer service (lean server)", () => {
  const received: Message[][] = [];
  let refuse = false;
  let t: GrpcPeerTransport;
  let tlsT: GrpcPeerTransport;
  let tls: PeerTlsOptions;
  let dir: { path: string; remove: () => void };

  before(async () => {
    dir = tempDir("kv-client-stream-");
    const files = makeTlsFiles(dir.path);
    tls = { cert: files.peerCert, key: files.peerKey, ca: files.caCert };
    const handler = {
      receive: (_e: unknown, messages: readonly Message[]) => {
        if (refuse) throw new KvError("FAILED_PRECONDITION", "message refused: another cluster");
        received.push([...messages]);
      },
      receiveSnapshot: async () => {
        throw new Error("no snapshots");
      },
      unreachable: () => {},
    };
    t = await GrpcPeerTransport.listen({ port: 0 });
    t.start({ clusterId: CLUSTER, memberId: 2 }, handler);
    tlsT = await GrpcPeerTransport.listen({ port: 0, tls });
    tlsT.start({ clusterId: CLUSTER, memberId: 2 }, handler);
  });

  after(async () => {
    await t.close();
    await tlsT.close();
    dir.remove();
  });

  for (const secure of [false, true]) {
    test(`batches are delivered in order, a ping measures the round trip (${secure ? "TLS" : "plaintext"})`, async () => {
      received.length = 0;
      const address = `127.0.0.1:${(secure ? tlsT : t).port}`;
      const { socket, scheme, readyEvent } = dialSocket(address, secure ? tls : undefined);
      let ready = false;
      socket.once(readyEvent, () => {
        ready = true;
      });
      const r = recorder();
      const call = new ClientStreamCall(
        socket,
        { scheme, authority: address, path: MESSAGES_PATH },
        r.handlers,
      );
      for (let i = 1; i <= 20; i++) call.write(framedBatch(CLUSTER, [i, i + 1000]));
      await until(() => received.length === 20);
      assert.ok(ready);
      assert.deepEqual(
        received.map((ms) => ms.map((m) => m.commit)),
        Array.from({ length: 20 }, (_, i) => [i + 1, i + 1001]),
      );
      if (secure) assert.equal((socket as import("node:tls").TLSSocket).alpnProtocol, "h2");
      const ms = await new Promise<number>((resolve, reject) =>
        call.ping((err, d) => (err === null ? resolve(d) : reject(err))),
      );
      assert.ok(ms >= 0 && ms < 1000, `rtt ${ms}`);
      call.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(r.status, undefined);
    });
  }

  test("a refused batch ends the call with FAILED_PRECONDITION", async () => {
    refuse = true;
    try {
      const address = `127.0.0.1:${t.port}`;
      const { socket, scheme } = dialSocket(address, undefined);
      const r = recorder();
      const call = new ClientStreamCall(
        socket,
        { scheme, authority: address, path: MESSAGES_PATH },
        r.handlers,
      );
      call.write(framedBatch(CLUSTER, [1]));
      await until(() => r.status !== undefined);
      assert.equal(r.status?.code, Status.FAILED_PRECONDITION);
      assert.match(r.status?.message ?? "", /another cluster/);
      assert.equal(call.write(framedBatch(CLUSTER, [2])), false);
    } finally {
      refuse = false;
    }
  });
});

// ---- a hand-driven HTTP/2 server ----

interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
  /** Decoded fields of a header block (names and values alternating). */
  fields?: string[];
}

/** One accepted connection: the client's frames as they came, and a way to send ours. */
class FakeConn {
  readonly frames: Frame[] = [];
  prefaceOk = false;
  ended = false;
  private preface = Buffer.alloc(0);
  private readonly decoder = new HpackDecoder();
  private readonly reader = new FrameReader(
    {
      frame: (buf, from, to, type, flags, id) =>
        this.frames.push({ type, flags, id, payload: Buffer.from(buf.subarray(from, to)) }),
      headerBlock: (id, block, from, to, endStream) => {
        const fields: string[] = [];
        this.decoder.decode(block, from, to, fields, 1 << 20);
        this.frames.push({
          type: h2.HEADERS,
          flags: endStream ? h2.FLAG_END_STREAM : 0,
          id,
          payload: Buffer.alloc(0),
          fields,
        });
      },
      protocolError: (what) => {
        throw new Error(what);
      },
      // The tests' server takes frames up to any MAX_FRAME_SIZE it advertises.
    },
    h2.MAX_MAX_FRAME_SIZE,
  );

  constructor(readonly socket: Socket) {
    socket.on("error", () => {});
    socket.on("end", () => {
      this.ended = true;
    });
    socket.on("data", (chunk: Buffer) => {
      if (!this.prefaceOk) {
        this.preface = Buffer.concat([this.preface, chunk]);
        if (this.preface.length < h2.CLIENT_PREFACE.length) return;
        assert.deepEqual(this.preface.subarray(0, h2.CLIENT_PREFACE.length), h2.CLIENT_PREFACE);
        this.prefaceOk = true;
        chunk = this.preface.subarray(h2.CLIENT_PREFACE.length);
      }
      this.reader.push(chunk);
    });
  }

  send(...frames: Buffer[]): void {
    this.socket.write(Buffer.concat(frames));
  }

  settings(pairs: [number, number][]): void {
    const p = Buffer.alloc(pairs.length * 6);
    pairs.forEach(([k, v], i) => {
      p.writeUInt16BE(k, i * 6);
      p.writeUInt32BE(v, i * 6 + 2);
    });
    this.send(h2frame(h2.SETTINGS, 0, 0, p));
  }

  windowUpdate(id: number, n: number): void {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(n);
    this.send(h2frame(h2.WINDOW_UPDATE, 0, id, p));
  }

  headers(fields: [string, string][], endStream: boolean): void {
    const flags = h2.FLAG_END_HEADERS | (endStream ? h2.FLAG_END_STREAM : 0);
    this.send(h2frame(h2.HEADERS, flags, 1, encodeHeaderBlock(fields)));
  }

  of(type: number, ack?: boolean): Frame[] {
    return this.frames.filter(
      (f) => f.type === type && (ack === undefined || ((f.flags & h2.FLAG_ACK) !== 0) === ack),
    );
  }

  dataBytes(): number {
    return this.of(h2.DATA).reduce((n, f) => n + f.payload.length, 0);
  }

  data(): Buffer {
    return Buffer.concat(this.of(h2.DATA).map((f) => f.payload));
  }

  /** Sends `pairs` and waits until the client has acknowledged them (so they apply). */
  async settled(pairs: [number, number][]): Promise<void> {
    const acks = this.of(h2.SETTINGS, true).length;
    this.settings(pairs);
    await until(() => this.of(h2.SETTINGS, true).length > acks);
  }
}

/** Counts the socket writes of `call` from now on. */
function countWrites(call: ClientStreamCall): { count: number } {
  const socket = (call as unknown as { socket: Socket }).socket;
  const counter = { count: 0 };
  const write = socket.write.bind(socket);
  socket.write = ((...args: Parameters<Socket["write"]>) => {
    counter.count++;
    return write(...args);
  }) as Socket["write"];
  return counter;
}

describe("against a hand-driven HTTP/2 server", () => {
  let server: Server;
  let port: number;
  let conns: FakeConn[] = [];
  const calls: ClientStreamCall[] = [];

  before(async () => {
    server = createServer((s) => conns.push(new FakeConn(s)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });

  after(async () => {
    for (const c of calls) c.close();
    for (const c of conns) c.socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  async function open(): Promise<{
    call: ClientStreamCall;
    conn: FakeConn;
    r: ReturnType<typeof recorder>;
  }> {
    conns = [];
    const r = recorder();
    const socket = netConnect({ host: "127.0.0.1", port, noDelay: true });
    const call = new ClientStreamCall(
      socket,
      { scheme: "http", authority: `127.0.0.1:${port}`, path: "/test.v1.T/Stream" },
      r.handlers,
    );
    calls.push(call);
    await until(() => conns.length === 1 && conns[0]!.of(h2.HEADERS).length === 1);
    return { call, conn: conns[0]!, r };
  }

  const payload = (n: number, seed = 0) =>
    Buffer.from(Array.from({ length: n }, (_, i) => (i + seed) & 0xff));

  test("preface, SETTINGS and request HEADERS; the server's SETTINGS are acknowledged", async () => {
    const { conn } = await open();
    assert.ok(conn.prefaceOk);
    const settings = conn.of(h2.SETTINGS, false)[0]!;
    assert.equal(settings.payload.readUInt16BE(0), h2.SETTINGS_ENABLE_PUSH);
    assert.equal(settings.payload.readUInt32BE(2), 0);
    const headers = conn.of(h2.HEADERS)[0]!;
    assert.equal(headers.id, 1);
    assert.equal(headers.flags & h2.FLAG_END_STREAM, 0);
    const f = headers.fields!;
    const get = (name: string) => f[f.indexOf(name) + 1];
    assert.equal(get(":method"), "POST");
    assert.equal(get(":scheme"), "http");
    assert.equal(get(":path"), "/test.v1.T/Stream");
    assert.equal(get(":authority"), `127.0.0.1:${port}`);
    assert.equal(get("content-type"), "application/grpc");
    assert.equal(get("te"), "trailers");
    assert.equal(conn.of(h2.SETTINGS, true).length, 0);
    await conn.settled([[h2.SETTINGS_MAX_CONCURRENT_STREAMS, 10]]);
  });

  test("a small stream window: the write waits for WINDOW_UPDATE, then drains", async () => {
    const { call, conn, r } = await open();
    await conn.settled([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 100]]);
    const m = payload(300);
    assert.equal(call.write(m), false);
    await until(() => conn.dataBytes() === 100);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(conn.dataBytes(), 100);
    assert.equal(r.drains, 0);
    conn.windowUpdate(1, 150);
    await until(() => conn.dataBytes() === 250);
    assert.equal(r.drains, 0);
    conn.windowUpdate(1, 1000);
    await until(() => r.drains === 1);
    assert.deepEqual(conn.data(), m);
    assert.equal(call.write(payload(10, 7)), true);
    await until(() => conn.dataBytes() === 310);
  });

  test("the connection window: past 65535 bytes the write waits for WINDOW_UPDATE on 0", async () => {
    const { call, conn, r } = await open();
    await conn.settled([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20]]);
    const m = payload(70_000, 3);
    assert.equal(call.write(m), false);
    await until(() => conn.dataBytes() === 65_535);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(conn.dataBytes(), 65_535);
    conn.windowUpdate(0, 10_000);
    await until(() => r.drains === 1);
    assert.deepEqual(conn.data(), m);
  });

  test("DATA is split at the server's MAX_FRAME_SIZE", async () => {
    const { call, conn } = await open();
    await conn.settled([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20]]);
    conn.windowUpdate(0, 1 << 20);
    await new Promise((resolve) => setTimeout(resolve, 20));
    call.write(payload(40_000));
    await until(() => conn.dataBytes() === 40_000);
    assert.deepEqual(
      conn.of(h2.DATA).map((f) => f.payload.length),
      [16_384, 16_384, 7_232],
    );
    await conn.settled([[h2.SETTINGS_MAX_FRAME_SIZE, 30_000]]);
    call.write(payload(40_000, 1));
    await until(() => conn.dataBytes() === 80_000);
    assert.deepEqual(
      conn
        .of(h2.DATA)
        .map((f) => f.payload.length)
        .slice(3),
      [30_000, 10_000],
    );
    assert.deepEqual(conn.data(), Buffer.concat([payload(40_000), payload(40_000, 1)]));
  });

  test("frames of one turn leave in one socket write", async () => {
    const { call, conn } = await open();
    await conn.settled([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20]]);
    const writes = countWrites(call);
    for (let i = 0; i < 10; i++) call.write(payload(100, i));
    call.ping(() => {});
    await until(() => conn.dataBytes() === 1000 && conn.of(h2.PING).length === 1);
    assert.equal(writes.count, 1);
  });

  test("flush() hands what was written to the socket at once, not at the end of the turn", async () => {
    const { call, conn } = await open();
    await conn.settled([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20]]);
    const writes = countWrites(call);
    call.write(payload(100, 1));
    call.write(payload(100, 2));
    assert.equal(writes.count, 0, "queued until the end of the turn");
    call.flush();
    assert.equal(writes.count, 1, "written by flush(), both messages in one write");
    call.flush();
    assert.equal(writes.count, 1, "nothing left to write");
    await until(() => conn.dataBytes() === 200);
    assert.equal(writes.count, 1);
  });

  test("socket back-pressure: write returns false until the socket drains", async () => {
    const { call, conn, r } = await open();
    await conn.settled([
      [h2.SETTINGS_INITIAL_WINDOW_SIZE, h2.MAX_WINDOW_SIZE],
      [h2.SETTINGS_MAX_FRAME_SIZE, h2.MAX_MAX_FRAME_SIZE],
    ]);
    conn.windowUpdate(0, h2.MAX_WINDOW_SIZE - 65_535);
    await new Promise((resolve) => setTimeout(resolve, 20));
    conn.socket.pause();
    let total = 0;
    let ok = true;
    for (let i = 0; i < 400 && ok; i++) {
      ok = call.write(payload(256 * 1024, i));
      total += 256 * 1024;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(ok, false, "the socket never pushed back");
    assert.equal(r.drains, 0);
    conn.socket.resume();
    await until(() => r.drains === 1, 20_000);
    await until(() => conn.dataBytes() === total, 20_000);
  });

  test("PINGs are answered; ping() measures the round trip", async () => {
    const { call, conn } = await open();
    const p = Buffer.from("abcdefgh");
    conn.send(h2frame(h2.PING, 0, 0, p));
    await until(() => conn.of(h2.PING, true).length === 1);
    assert.deepEqual(conn.of(h2.PING, true)[0]!.payload, p);
    let got: [Error | null, number] | undefined;
    assert.equal(
      call.ping((err, ms) => {
        got = [err, ms];
      }),
      true,
    );
    await until(() => conn.of(h2.PING, false).length === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(got, undefined);
    conn.send(h2frame(h2.PING, h2.FLAG_ACK, 0, conn.of(h2.PING, false)[0]!.payload));
    await until(() => got !== undefined);
    assert.equal(got![0], null);
    assert.ok(got![1] >= 15, `rtt ${got![1]}`);
    // A ping outstanding when the call ends fails.
    let failed: Error | null = null;
    call.ping((err) => {
      failed = err;
    });
    call.close();
    assert.ok(failed !== null);
  });

  test("DATA from the server: its receive window is returned", async () => {
    const { conn } = await open();
    conn.headers(
      [
        [":status", "200"],
        ["content-type", "application/grpc"],
      ],
      false,
    );
    conn.send(h2frame(h2.DATA, 0, 1, payload(1000)));
    await until(() => conn.of(h2.WINDOW_UPDATE).length === 2);
    const updates = conn.of(h2.WINDOW_UPDATE).map((f) => [f.id, f.payload.readUInt32BE(0)]);
    assert.deepEqual(updates.sort(), [
      [0, 1000],
      [1, 1000],
    ]);
  });

  test("a trailers-only response: its status, the message percent-decoded", async () => {
    const { call, conn, r } = await open();
    conn.headers(
      [
        [":status", "200"],
        ["content-type", "application/grpc"],
        ["grpc-status", String(Status.FAILED_PRECONDITION)],
        ["grpc-message", "message%20refused: removed"],
      ],
      true,
    );
    await until(() => r.status !== undefined);
    assert.deepEqual(r.status, {
      code: Status.FAILED_PRECONDITION,
      message: "message refused: removed",
    });
    assert.equal(call.write(payload(5)), false);
    await until(() => conn.ended);
    assert.equal(conn.of(h2.RST_STREAM).length, 0);
  });

  test("headers, then trailers: the trailers' status", async () => {
    const { conn, r } = await open();
    conn.headers(
      [
        [":status", "200"],
        ["content-type", "application/grpc"],
      ],
      false,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(r.status, undefined);
    conn.headers([["grpc-status", "0"]], true);
    await until(() => r.status !== undefined);
    assert.deepEqual(r.status, { code: Status.OK, message: "" });
  });

  test("an HTTP status other than 200 without grpc-status: UNKNOWN", async () => {
    const { conn, r } = await open();
    conn.headers([[":status", "503"]], true);
    await until(() => r.status !== undefined);
    assert.equal(r.status?.code, Status.UNKNOWN);
    assert.match(r.status?.message ?? "", /503/);
  });

  for (const [what, act] of [
    [
      "RST_STREAM",
      (c: FakeConn) => c.send(h2frame(h2.RST_STREAM, 0, 1, Buffer.from([0, 0, 0, 2]))),
    ],
    ["GOAWAY", (c: FakeConn) => c.send(h2frame(h2.GOAWAY, 0, 0, Buffer.alloc(8)))],
    ["a cut socket", (c: FakeConn) => c.socket.destroy()],
  ] as const) {
    test(`${what} -> UNAVAILABLE`, async () => {
      const { conn, r } = await open();
      act(conn);
      await until(() => r.status !== undefined);
      assert.equal(r.status?.code, Status.UNAVAILABLE, r.status?.message);
    });
  }

  test("a header block that is not HPACK: GOAWAY(COMPRESSION_ERROR), INTERNAL", async () => {
    const { conn, r } = await open();
    conn.send(
      h2frame(
        h2.HEADERS,
        h2.FLAG_END_HEADERS,
        1,
        Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
      ),
    );
    await until(() => r.status !== undefined);
    assert.equal(r.status?.code, Status.INTERNAL);
    await until(() => conn.of(h2.GOAWAY).length === 1);
    assert.equal(conn.of(h2.GOAWAY)[0]!.payload.readUInt32BE(4), h2.ErrorCode.COMPRESSION_ERROR);
  });

  for (const split of [false, true]) {
    test(`a frame over MAX_FRAME_SIZE: GOAWAY(FRAME_SIZE_ERROR) once its header is in${split ? " (header split across reads)" : ""}`, async () => {
      const { conn, r } = await open();
      // The header declares 16,385 bytes; only 10 follow. Buffering until the frame is
      // complete would wait forever; the header alone is the error.
      const header = Buffer.alloc(h2.FRAME_HEADER_BYTES);
      header.writeUIntBE(h2.DEFAULT_MAX_FRAME_SIZE + 1, 0, 3);
      header[3] = h2.DATA;
      header.writeUInt32BE(1, 5);
      if (split) {
        conn.send(header.subarray(0, 4));
        await new Promise((resolve) => setTimeout(resolve, 20));
        conn.send(Buffer.concat([header.subarray(4), Buffer.alloc(10)]));
      } else {
        conn.send(Buffer.concat([header, Buffer.alloc(10)]));
      }
      await until(() => r.status !== undefined);
      assert.match(r.status?.message ?? "", /16385 bytes, over the MAX_FRAME_SIZE of 16384/);
      await until(() => conn.of(h2.GOAWAY).length === 1);
      assert.equal(conn.of(h2.GOAWAY)[0]!.payload.readUInt32BE(4), h2.ErrorCode.FRAME_SIZE_ERROR);
    });
  }

  test("close(): RST_STREAM CANCEL, then the socket's end; no status", async () => {
    const { call, conn, r } = await open();
    call.close();
    call.close();
    await until(() => conn.ended);
    const rst = conn.of(h2.RST_STREAM);
    assert.equal(rst.length, 1);
    assert.equal(rst[0]!.payload.readUInt32BE(0), h2.ErrorCode.CANCEL);
    assert.equal(r.status, undefined);
    assert.equal(call.write(payload(1)), false);
    assert.equal(
      call.ping(() => {}),
      false,
    );
  });

  test("close() while still connecting, and a refused connection", async () => {
    const r = recorder();
    const socket = netConnect({ host: "127.0.0.1", port });
    const call = new ClientStreamCall(
      socket,
      { scheme: "http", authority: "x", path: "/p" },
      r.handlers,
    );
    call.close();
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve));
    const deadPort = (dead.address() as { port: number }).port;
    await new Promise((resolve) => dead.close(resolve));
    const r2 = recorder();
    new ClientStreamCall(
      netConnect({ host: "127.0.0.1", port: deadPort }),
      { scheme: "http", authority: "x", path: "/p" },
      r2.handlers,
    );
    await until(() => r2.status !== undefined);
    assert.equal(r2.status?.code, Status.UNAVAILABLE);
    assert.equal(r.status, undefined);
  });
});
