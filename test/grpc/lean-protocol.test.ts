/**
 * The lean path's gRPC-over-HTTP/2 details (src/grpc/grpc-server.ts documents them), on a
 * GrpcServer with a test service, driven by raw HTTP/2 requests and by grpc-js:
 * HTTP 405/415 for a wrong method or content type, te optional, compression refused,
 * grpc-timeout syntax, one request message per unary call, header lists over the limit,
 * metadata (ASCII and -bin) round trips in headers and trailers, trailers-only error
 * responses, client and bidi streaming with back-pressure on the request stream, receive
 * windows restored as the handler reads (20 MiB through one stream) and enforced (a client
 * past its window is reset), GOAWAY with a grace period, deadlines of requests that waited
 * for a slot, server-wide admission, and the rapid-reset bound.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { after, before, test } from "node:test";
import { Client, credentials, Metadata as GrpcJsMetadata, status } from "@grpc/grpc-js";
import { GrpcServer } from "../../src/grpc/grpc-server.js";
import { Metadata } from "../../src/grpc/metadata.js";
import type { MethodDescriptor } from "../../src/grpc/method.js";
import { GrpcError, Status } from "../../src/grpc/status.js";
import { frame, GRPC_HEADERS, rawCall } from "../support/raw-grpc.js";
import { h2frame, RawH2, requestBlock } from "../support/raw-h2.js";
import { waitFor } from "../support/wait-for.js";

const SERVICE = "test.Echo";
const bytes = <K extends MethodDescriptor["kind"]>(
  name: string,
  kind: K,
  service = SERVICE,
): MethodDescriptor<Buffer, Buffer, K> => ({
  name,
  path: `/${service}/${name}`,
  kind,
  decode: (b) => Buffer.from(b),
  encode: (m) => m,
});

const echoService = {
  name: SERVICE,
  methods: {
    Unary: bytes("Unary", "unary"),
    Fail: bytes("Fail", "unary"),
    Slow: bytes("Slow", "unary"),
    Sum: bytes("Sum", "client_streaming"),
    Idle: bytes("Idle", "client_streaming"),
    Chat: bytes("Chat", "bidi_streaming"),
  },
};

let server: GrpcServer;
let address: string;
let slowAborted = false;

before(async () => {
  server = new GrpcServer({ host: "127.0.0.1", port: 0, maxReceiveMessageBytes: 64 * 1024 });
  server.addService(echoService, {
    Unary: (request, call) => {
      // Echo the request's metadata as response headers and trailers.
      const md = new Metadata();
      for (const [k, v] of call.metadata.entries()) if (k.startsWith("x-")) md.add(k, v);
      call.sendHeaders(md);
      call.trailers = md;
      return request;
    },
    Fail: () => {
      throw new GrpcError(
        Status.FAILED_PRECONDITION,
        "präcondition: 100% failed",
        new Metadata().set("x-why-bin", Buffer.from([0, 1, 255])),
      );
    },
    Slow: (request, call) =>
      new Promise((resolve) => {
        call.signal.addEventListener("abort", () => {
          slowAborted = true;
          resolve(request);
        });
      }),
    Sum: async (requests) => {
      let total = 0;
      for await (const m of requests) total += m.length;
      return Buffer.from(String(total));
    },
    Idle: () => new Promise<Buffer>(() => {}),
    Chat: async (requests, call) => {
      for await (const m of requests) {
        if (!call.write(Buffer.concat([Buffer.from("re:"), m]))) await call.whenWritable();
      }
    },
  });
  const port = await server.listen();
  address = `127.0.0.1:${port}`;
});

after(async () => {
  await server.shutdown(0);
});

function session(): http2.ClientHttp2Session {
  const s = http2.connect(`http://${address}`);
  s.on("error", () => {});
  return s;
}

test("HTTP-level refusals: GET is 405, a wrong content type 415; te: trailers is optional", async () => {
  const s = session();
  try {
    const get = await rawCall(s, { ":method": "GET", ":path": `/${SERVICE}/Unary` }, [], {
      plain: true,
    });
    assert.equal(get.httpStatus, 405);
    const json = await rawCall(
      s,
      { ":path": `/${SERVICE}/Unary`, "content-type": "application/json" },
      [frame(Buffer.from("x"))],
    );
    assert.equal(json.httpStatus, 415);
    const noTe = await rawCall(
      s,
      { ":method": "POST", ":path": `/${SERVICE}/Unary`, "content-type": "application/grpc+proto" },
      [frame(Buffer.from("hi"))],
      { plain: true },
    );
    assert.equal(noTe.grpcStatus, Status.OK);
    assert.equal(String(noTe.messages[0]), "hi");
  } finally {
    s.close();
  }
});

test("compression is refused: grpc-encoding gzip is UNIMPLEMENTED, a compressed flag INTERNAL", async () => {
  const s = session();
  try {
    const gzip = await rawCall(s, { ":path": `/${SERVICE}/Unary`, "grpc-encoding": "gzip" }, [
      frame(Buffer.from("x"), true),
    ]);
    assert.equal(gzip.grpcStatus, Status.UNIMPLEMENTED);
    assert.equal(gzip.trailers["grpc-accept-encoding"], "identity");
    const flagged = await rawCall(s, { ":path": `/${SERVICE}/Unary` }, [
      frame(Buffer.from("x"), true),
    ]);
    assert.equal(flagged.grpcStatus, Status.INTERNAL);
    assert.match(flagged.grpcMessage ?? "", /compress/);
  } finally {
    s.close();
  }
});

test("grpc-timeout: malformed is INTERNAL; a passed deadline ends the call and fires its signal", async () => {
  const s = session();
  try {
    const bad = await rawCall(s, { ":path": `/${SERVICE}/Unary`, "grpc-timeout": "12x" }, [
      frame(Buffer.from("x")),
    ]);
    assert.equal(bad.grpcStatus, Status.INTERNAL);
    assert.match(bad.grpcMessage ?? "", /grpc-timeout/);
    slowAborted = false;
    const slow = await rawCall(s, { ":path": `/${SERVICE}/Slow`, "grpc-timeout": "50m" }, [
      frame(Buffer.from("x")),
    ]);
    assert.equal(slow.grpcStatus, Status.DEADLINE_EXCEEDED);
    await waitFor(() => slowAborted, "the handler's signal to fire");
  } finally {
    s.close();
  }
});

test("a unary call takes exactly one whole message", async () => {
  const s = session();
  try {
    const path = { ":path": `/${SERVICE}/Unary` };
    assert.equal((await rawCall(s, path, [])).grpcStatus, Status.INTERNAL);
    const two = await rawCall(s, path, [frame(Buffer.from("a")), frame(Buffer.from("b"))]);
    assert.equal(two.grpcStatus, Status.INTERNAL);
    const cut = Buffer.from(frame(Buffer.from("truncated")).subarray(0, 8));
    assert.equal((await rawCall(s, path, [cut])).grpcStatus, Status.INTERNAL);
    // A message split over many DATA frames, prefix included, is one message.
    const whole = frame(Buffer.alloc(30_000, 7));
    const pieces = [
      whole.subarray(0, 2),
      whole.subarray(2, 9),
      whole.subarray(9, 20_000),
      whole.subarray(20_000),
    ];
    const split = await rawCall(
      s,
      path,
      pieces.map((p) => Buffer.from(p)),
    );
    assert.equal(split.grpcStatus, Status.OK);
    assert.equal(split.messages[0]?.length, 30_000);
    const big = await rawCall(s, path, [frame(Buffer.alloc(64 * 1024 + 1))]);
    assert.equal(big.grpcStatus, Status.RESOURCE_EXHAUSTED);
  } finally {
    s.close();
  }
});

test("metadata round trip: ASCII and -bin values in headers and trailers; error trailers percent-encoded", async () => {
  const client = new Client(address, credentials.createInsecure());
  try {
    const md = new GrpcJsMetadata();
    md.set("x-text", "hello world");
    md.set("x-data-bin", Buffer.from([0, 0xff, 0x10, 0x80]));
    let headers: GrpcJsMetadata | undefined;
    let trailers: GrpcJsMetadata | undefined;
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const call = client.makeUnaryRequest(
        `/${SERVICE}/Unary`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from("payload"),
        md,
        {},
        (err, res) => (err === null && res !== undefined ? resolve(res) : reject(err)),
      );
      call.on("metadata", (m) => {
        headers = m;
      });
      call.on("status", (s) => {
        trailers = s.metadata;
      });
    });
    assert.equal(String(reply), "payload");
    for (const m of [headers, trailers]) {
      assert.deepEqual(m?.get("x-text"), ["hello world"]);
      assert.deepEqual(m?.get("x-data-bin"), [Buffer.from([0, 0xff, 0x10, 0x80])]);
    }
    const failure = await new Promise<{ code: number; details: string; metadata: GrpcJsMetadata }>(
      (resolve) =>
        client.makeUnaryRequest(
          `/${SERVICE}/Fail`,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          new GrpcJsMetadata(),
          {},
          (err) => resolve(err as never),
        ),
    );
    assert.equal(failure.code, status.FAILED_PRECONDITION);
    assert.equal(failure.details, "präcondition: 100% failed");
    assert.deepEqual(failure.metadata.get("x-why-bin"), [Buffer.from([0, 1, 255])]);
  } finally {
    client.close();
  }
});

test("a request header list over the limit is RESOURCE_EXHAUSTED; the connection goes on", async () => {
  const s = session();
  try {
    const huge = await rawCall(s, { ":path": `/${SERVICE}/Unary`, "x-big": "a".repeat(20_000) }, [
      frame(Buffer.from("x")),
    ]);
    assert.equal(huge.grpcStatus, Status.RESOURCE_EXHAUSTED);
    const ok = await rawCall(s, { ":path": `/${SERVICE}/Unary` }, [frame(Buffer.from("x"))]);
    assert.equal(ok.grpcStatus, Status.OK);
  } finally {
    s.close();
  }
});

test("client streaming and bidi streaming, in order", async () => {
  const client = new Client(address, credentials.createInsecure());
  try {
    const sum = await new Promise<string>((resolve, reject) => {
      const call = client.makeClientStreamRequest(
        `/${SERVICE}/Sum`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        (err, res) => (err === null && res !== undefined ? resolve(String(res)) : reject(err)),
      );
      for (let i = 0; i < 100; i++) call.write(Buffer.alloc(1000));
      call.end();
    });
    assert.equal(sum, "100000");
    const chat = client.makeBidiStreamRequest(
      `/${SERVICE}/Chat`,
      (b: Buffer) => b,
      (b: Buffer) => b,
    );
    const got: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      chat.on("data", (b: Buffer) => got.push(String(b)));
      chat.on("end", resolve);
      chat.on("error", reject);
    });
    for (let i = 0; i < 50; i++) chat.write(Buffer.from(`m${i}`));
    chat.end();
    await done;
    assert.deepEqual(
      got,
      Array.from({ length: 50 }, (_, i) => `re:m${i}`),
    );
  } finally {
    client.close();
  }
});

test("a streaming handler that never reads stops the client (flow control), then cancels cleanly", async () => {
  const s = session();
  try {
    const req = s.request({ ...GRPC_HEADERS, ":path": `/${SERVICE}/Idle` });
    req.on("error", () => {});
    const chunk = frame(Buffer.alloc(16 * 1024, 1));
    // Write while node:http2 keeps taking data off its buffer (the server grants window).
    let accepted = 0;
    for (let i = 0; i < 1000; i++) {
      if (!req.write(chunk)) {
        const drained = await Promise.race([
          new Promise<boolean>((r) => req.once("drain", () => r(true))),
          new Promise<boolean>((r) => setTimeout(() => r(false), 300)),
        ]);
        if (!drained) break;
      }
      accepted += chunk.length;
    }
    const window = 1024 * 1024; // the server's stream window
    assert.ok(req.writableLength > 0, "the client's writes are held back");
    assert.ok(
      accepted < window + 256 * 1024,
      `the server took ${accepted} bytes before stopping the client`,
    );
    assert.ok(accepted >= 64 * 1024, `the server took only ${accepted} bytes`);
    req.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => server.stats().callsInFlight <= 1, "the idle call to be counted once");
  } finally {
    s.destroy();
  }
});

test("errors are trailers-only: one HEADERS block with :status 200, content-type and grpc-status, no DATA", async () => {
  const s = session();
  try {
    for (const path of [`/${SERVICE}/Fail`, `/${SERVICE}/Missing`]) {
      const res = await rawCall(s, { ":path": path }, [frame(Buffer.alloc(0))]);
      assert.equal(res.httpStatus, 200, path);
      assert.match(String(res.headers["content-type"]), /^application\/grpc/, path);
      assert.ok(
        res.headers["grpc-status"] !== undefined,
        `${path}: grpc-status not in the headers`,
      );
      assert.notEqual(res.grpcStatus, Status.OK, path);
      assert.equal(res.messages.length, 0, path);
    }
  } finally {
    s.close();
  }
});

test("a request stream far past the stream and connection windows is received whole: windows are restored as the handler reads", async () => {
  const client = new Client(address, credentials.createInsecure());
  try {
    // 20 MiB: 20 times the stream window, past the 16 MiB connection window.
    const messages = 1280;
    const size = 16 * 1024;
    const sum = await new Promise<string>((resolve, reject) => {
      const call = client.makeClientStreamRequest(
        `/${SERVICE}/Sum`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        new GrpcJsMetadata(),
        { deadline: Date.now() + 30_000 },
        (err, res) => (err === null && res !== undefined ? resolve(String(res)) : reject(err)),
      );
      const chunk = Buffer.alloc(size, 7);
      let i = 0;
      const more = () => {
        while (i < messages) {
          i++;
          if (!call.write(chunk)) {
            call.once("drain", more);
            return;
          }
        }
        call.end();
      };
      more();
    });
    assert.equal(sum, String(messages * size));
  } finally {
    client.close();
  }
});

test("a client that sends past its stream window gets RST_STREAM FLOW_CONTROL_ERROR; the connection goes on", async () => {
  const port = Number(address.split(":")[1]);
  const raw = new RawH2(port);
  try {
    await raw.ready;
    // Idle never reads, so the server grants no window beyond the initial 1 MiB.
    const frames: Buffer[] = [h2frame(1, 4 /* END_HEADERS */, 1, requestBlock(`/${SERVICE}/Idle`))];
    const chunk = frame(Buffer.alloc(16 * 1024 - 5, 1));
    for (let i = 0; i < 65; i++) frames.push(h2frame(0, 0, 1, chunk));
    raw.write(...frames);
    await waitFor(() => raw.resets > 0, "RST_STREAM of the stream past its window");
    assert.equal(raw.goaway, undefined, "the connection was closed");
    assert.equal(raw.closed, false);
  } finally {
    raw.destroy();
  }
});

test("shutdown: GOAWAY, calls in flight finish within the grace period, new ones are refused", async () => {
  const own = new GrpcServer({ host: "127.0.0.1", port: 0 });
  let release: (() => void) | undefined;
  own.addService(
    { name: "test.Slow", methods: { Wait: bytes("Wait", "unary", "test.Slow") } },
    {
      Wait: (request) =>
        new Promise((resolve) => {
          release = () => resolve(request);
        }),
    },
  );
  const port = await own.listen();
  const s = http2.connect(`http://127.0.0.1:${port}`);
  s.on("error", () => {});
  const goaway = new Promise<void>((resolve) => s.once("goaway", () => resolve()));
  const inFlight = rawCall(s, { ":path": "/test.Slow/Wait" }, [frame(Buffer.from("late"))]);
  await waitFor(() => release !== undefined, "the call to start");
  const stopped = own.shutdown(5000);
  await goaway;
  // Well into the grace period, the call is still served.
  await new Promise((r) => setTimeout(r, 300));
  release!();
  const result = await inFlight;
  assert.equal(result.grpcStatus, Status.OK);
  assert.equal(String(result.messages[0]), "late");
  await stopped;
  s.destroy();
  assert.equal(own.stats().connections, 0);
});

/** A server whose Hold calls run until the test releases them (they ignore cancellation). */
async function holdingServer(options: {
  maxConcurrentStreams?: number;
  maxConcurrentCalls?: number;
  reservedCallsPerConnection?: number;
}): Promise<{
  server: GrpcServer;
  url: string;
  started: string[];
  release: (name: string) => void;
}> {
  const started: string[] = [];
  const held = new Map<string, () => void>();
  const own = new GrpcServer({ host: "127.0.0.1", port: 0, ...options });
  own.addService(
    {
      name: "test.Hold",
      methods: {
        Hold: bytes("Hold", "unary", "test.Hold"),
        Echo: bytes("Echo", "unary", "test.Hold"),
      },
    },
    {
      Hold: (request) =>
        new Promise((resolve) => {
          started.push(String(request));
          held.set(String(request), () => resolve(request));
        }),
      Echo: (request) => {
        started.push(String(request));
        return request;
      },
    },
  );
  const port = await own.listen();
  return {
    server: own,
    url: `http://127.0.0.1:${port}`,
    started,
    release: (name) => {
      const r = held.get(name);
      assert.ok(r !== undefined, `${name} is not running`);
      held.delete(name);
      r();
    },
  };
}

const HOLD = { ":path": "/test.Hold/Hold" };
const ECHO = { ":path": "/test.Hold/Echo" };

test("a request that waited for a slot counts its deadline from its HEADERS: past it, DEADLINE_EXCEEDED and no handler", async () => {
  const h = await holdingServer({ maxConcurrentStreams: 1 });
  const s = http2.connect(h.url);
  s.on("error", () => {});
  try {
    // The client resets its call, whose handler goes on: the connection's one slot stays taken.
    const first = s.request({ ...GRPC_HEADERS, ...HOLD });
    first.on("error", () => {});
    first.end(frame(Buffer.from("first")));
    await waitFor(() => h.started.includes("first"), "the first call to start");
    first.close(http2.constants.NGHTTP2_CANCEL);
    await waitFor(() => first.closed, "the first stream to close");
    const late = rawCall(s, { ...ECHO, "grpc-timeout": "200m" }, [frame(Buffer.from("late"))]);
    const inTime = rawCall(s, { ...ECHO, "grpc-timeout": "20S" }, [frame(Buffer.from("inTime"))]);
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(h.started, ["first"], "nothing started while the slot was taken");
    h.release("first");
    const [lateResult, inTimeResult] = await Promise.all([late, inTime]);
    assert.equal(lateResult.grpcStatus, Status.DEADLINE_EXCEEDED);
    assert.equal(inTimeResult.grpcStatus, Status.OK);
    assert.deepEqual(h.started, ["first", "inTime"], "the late call's handler never ran");
  } finally {
    s.destroy();
    await h.server.shutdown(0);
  }
});

test("server-wide admission: past maxConcurrentCalls requests wait and connections take turns; a connection's reserve is served at once", async () => {
  const h = await holdingServer({ maxConcurrentCalls: 2, reservedCallsPerConnection: 1 });
  const a = http2.connect(h.url);
  const b = http2.connect(h.url);
  const c = http2.connect(h.url);
  for (const s of [a, b, c]) s.on("error", () => {});
  try {
    const calls: Promise<unknown>[] = [];
    const hold = (s: http2.ClientHttp2Session, name: string) =>
      calls.push(rawCall(s, HOLD, [frame(Buffer.from(name))]));
    // a1 from a's reserve, a2 in the pool's last slot; a3 and a4 wait.
    for (const name of ["a1", "a2", "a3", "a4"]) hold(a, name);
    await waitFor(() => h.server.stats().connectionsWaiting === 1, "a to wait");
    // b1 from b's reserve; b2 waits, after a's turn.
    for (const name of ["b1", "b2"]) hold(b, name);
    await waitFor(() => h.started.includes("b1"), "b's reserved call to start");
    await waitFor(() => h.server.stats().connectionsWaiting === 2, "b to wait");
    // c's first call is served while a and b wait.
    const echo = await rawCall(c, ECHO, [frame(Buffer.from("c1"))]);
    assert.equal(echo.grpcStatus, Status.OK);
    assert.deepEqual(h.started, ["a1", "a2", "b1", "c1"]);
    assert.equal(h.server.stats().callsInFlight, 3);
    // 3 running (one past the limit, by b's reserve): releasing one leaves 2, no room.
    h.release("a1");
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(h.started, ["a1", "a2", "b1", "c1"], "a slot freed past the limit");
    // Now one slot: a's turn (a3).
    h.release("a2");
    await waitFor(() => h.started.length === 5, "a3 to start");
    assert.equal(h.started[4], "a3");
    // The slot a3 frees is b's turn (b2, although a4 came first); then a, with nothing
    // running, starts a4 from its reserve.
    h.release("a3");
    await waitFor(() => h.started.length === 7, "b2 and a4 to start");
    assert.deepEqual(h.started.slice(5), ["b2", "a4"]);
    for (const name of ["b1", "b2", "a4"]) h.release(name);
    await Promise.all(calls);
    assert.equal(h.server.stats().connectionsWaiting, 0);
  } finally {
    for (const s of [a, b, c]) s.destroy();
    await h.server.shutdown(0);
  }
});

test("rapid reset: streams reset while their handlers run keep their slots; past 4 x maxConcurrentStreams waits, GOAWAY ENHANCE_YOUR_CALM", async () => {
  const h = await holdingServer({ maxConcurrentStreams: 5 });
  const raw = new RawH2(Number(new URL(h.url).port));
  try {
    await raw.ready;
    const rst = Buffer.alloc(4);
    rst.writeUInt32BE(8); // CANCEL
    const frames: Buffer[] = [];
    for (let i = 0, id = 1; i < 50; i++, id += 2) {
      frames.push(
        h2frame(1, 4 /* END_HEADERS */, id, requestBlock(HOLD[":path"])),
        h2frame(0, 1 /* END_STREAM */, id, frame(Buffer.from(`r${i}`))),
        h2frame(3, 0, id, rst),
      );
    }
    raw.write(...frames);
    await waitFor(() => raw.goaway !== undefined, "GOAWAY for the reset flood");
    assert.equal(raw.goaway, 0xb, "GOAWAY ENHANCE_YOUR_CALM");
    assert.ok(h.started.length <= 5, `${h.started.length} handlers started`);
  } finally {
    raw.destroy();
    for (const name of [...h.started]) h.release(name);
    await h.server.shutdown(0);
  }
});
