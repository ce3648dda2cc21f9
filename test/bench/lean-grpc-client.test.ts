/**
 * The cluster benchmarks' lean gRPC client (bench/cluster/lean-grpc-client.ts) against a
 * single-node kv-engine server in-process: unary and server-streaming calls, a Scan larger
 * than one frame and than a 64 KiB window (with windows that small on both levels, so
 * that the client's WINDOW_UPDATEs are what keeps it going), error statuses (trailers-only
 * responses), 500 calls at once past the server's MAX_CONCURRENT_STREAMS, a connection
 * cut under outstanding calls and a server's GOAWAY (the calls reject, the next call
 * reconnects); against a hand-driven HTTP/2 server: SETTINGS ACK, PING ACK, a small
 * stream send window, CONTINUATION, RST_STREAM; and against one etcd process when `etcd`
 * is on PATH.
 */
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ETCD_MISSING, EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import {
  decodeRange,
  decodeResponseHeader,
  ETCD_PUT,
  ETCD_RANGE,
  encodePut,
  encodeRange,
} from "../../bench/cluster/etcd-codec.js";
import { LeanGrpcClient, LeanGrpcError } from "../../bench/cluster/lean-grpc-client.js";
import * as h2 from "../../src/grpc/http2/frames.js";
import { HpackDecoder } from "../../src/grpc/http2/hpack-decoder.js";
import { encodeHeaderBlock } from "../../src/grpc/http2/hpack-encoder.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import {
  GetRequestSchema,
  GetResponseSchema,
  PutRequestSchema,
  ScanRequestSchema,
} from "../../src/proto/gen/kv/v1/kv_pb.js";
import { decodeScanResponse } from "../../src/proto/scan-codec.js";
import { KvServer } from "../../src/server/index.js";
import { h2frame } from "../support/raw-h2.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

const KV = "/kv.v1.KvService/";
const b = (s: string) => Buffer.from(s);
const putReq = (key: string, value: Uint8Array) =>
  toBinary(PutRequestSchema, create(PutRequestSchema, { key: b(key), value }));
const getReq = (key: string) =>
  toBinary(GetRequestSchema, create(GetRequestSchema, { key: b(key) }));
const scanReq = (start: string, end: string) =>
  toBinary(ScanRequestSchema, create(ScanRequestSchema, { startKey: b(start), endKey: b(end) }));

async function getValue(c: LeanGrpcClient, key: string): Promise<string | undefined> {
  const msgs = await c.call(`${KV}Get`, getReq(key));
  assert.equal(msgs.length, 1);
  const res = fromBinary(GetResponseSchema, msgs[0]!);
  return res.found ? Buffer.from(res.value).toString() : undefined;
}

async function rejectsWith(p: Promise<unknown>, status: number | undefined, what: RegExp) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof LeanGrpcError, String(err));
    assert.equal(err.grpcStatus, status, err.message);
    assert.match(err.message, what);
    return true;
  });
}

/** Rows of the big scan: 400 x 1 KiB, about 400 KiB in several messages. */
const ROWS = 400;
const ROW_VALUE = Buffer.alloc(1024, 0x61);
const rowKey = (i: number) => `row/${String(i).padStart(4, "0")}`;

describe("against kv-engine", () => {
  let store: KvStore;
  let server: KvServer;
  const clients: LeanGrpcClient[] = [];
  const client = (address = server.address, timeoutMs = 10_000, options = {}) => {
    const c = new LeanGrpcClient(address, timeoutMs, options);
    clients.push(c);
    return c;
  };

  before(async () => {
    store = await open("/db", { fs: new MemoryFileSystem(), sync: false });
    const batch = store.batch();
    for (let i = 0; i < ROWS; i++) batch.put(rowKey(i), ROW_VALUE);
    await store.write(batch);
    server = await KvServer.start(store, { port: 0 });
  });

  after(async () => {
    for (const c of clients) c.close();
    await server.shutdown(0);
    await store.close();
  });

  test("Put then Get: one response message each", async () => {
    const c = client();
    const put = await c.call(`${KV}Put`, putReq("k1", b("v1")));
    assert.equal(put.length, 1);
    assert.equal(await getValue(c, "k1"), "v1");
    assert.equal(await getValue(c, "absent"), undefined);
  });

  for (const [name, options] of [
    ["default windows", {}],
    [
      "64 KiB windows (the client's WINDOW_UPDATEs keep it going)",
      { streamWindow: 65_535, connectionWindow: 65_535 },
    ],
  ] as const) {
    test(`a Scan of ~400 KiB in many messages, ${name}`, async () => {
      const c = client(server.address, 5000, options);
      for (let round = 0; round < 3; round++) {
        const msgs = await c.call(`${KV}Scan`, scanReq("row/", "row0"));
        assert.ok(msgs.length > 1, `${msgs.length} messages`);
        const keys = msgs.flatMap((m) =>
          decodeScanResponse(m).entries.map((e) => Buffer.from(e.key).toString()),
        );
        assert.equal(keys.length, ROWS);
        assert.deepEqual(
          keys,
          Array.from({ length: ROWS }, (_, i) => rowKey(i)),
        );
        for (const m of msgs)
          for (const e of decodeScanResponse(m).entries) assert.ok(ROW_VALUE.equals(e.value));
      }
    });
  }

  test("error statuses: INVALID_ARGUMENT for an empty key, UNIMPLEMENTED for an unknown method", async () => {
    const c = client();
    await rejectsWith(c.call(`${KV}Put`, putReq("", b("v"))), 3, /Put: grpc-status 3 .*key/i);
    await rejectsWith(c.call(`${KV}Nope`, new Uint8Array(0)), 12, /Nope: grpc-status 12/);
    // The connection is still good.
    assert.equal(await getValue(c, "k1"), "v1");
  });

  test("500 calls at once (past MAX_CONCURRENT_STREAMS), each its own answer", async () => {
    const c = client();
    const n = 500;
    await Promise.all(
      Array.from({ length: n }, (_, i) => c.call(`${KV}Put`, putReq(`many/${i}`, b(`v${i}`)))),
    );
    const got = await Promise.all(Array.from({ length: n }, (_, i) => getValue(c, `many/${i}`)));
    assert.deepEqual(
      got,
      Array.from({ length: n }, (_, i) => `v${i}`),
    );
  });

  test("the connection cut under outstanding calls: they reject; the next call reconnects", async () => {
    const proxy = await TcpProxy.start(server.address);
    try {
      const c = client(proxy.address);
      assert.equal(await getValue(c, "k1"), "v1");
      proxy.delay(300);
      const outstanding = Array.from({ length: 20 }, () => getValue(c, "k1"));
      const settled = Promise.allSettled(outstanding);
      await new Promise((r) => setTimeout(r, 50));
      proxy.cut("reset");
      const results = await settled;
      for (const r of results) {
        assert.equal(r.status, "rejected");
        assert.match(
          String((r as PromiseRejectedResult).reason),
          /Get: connection to .* (closed|ECONNRESET)/,
        );
      }
      proxy.heal();
      proxy.delay(0);
      assert.equal(await getValue(c, "k1"), "v1");
      assert.equal(proxy.connections, 2);
    } finally {
      await proxy.close();
    }
  });

  test("a server's GOAWAY: the next call opens a new connection", async () => {
    const other = await open("/db2", { fs: new MemoryFileSystem(), sync: false });
    let s = await KvServer.start(other, { port: 0 });
    const address = s.address;
    try {
      const c = client(address);
      await c.call(`${KV}Put`, putReq("g", b("1")));
      assert.equal(c.connected, true);
      await s.shutdown(1000);
      // The GOAWAY (and then the close) reach the client: it takes no new calls on it.
      await waitFor(() => !c.connected, "the client to see the GOAWAY");
      s = await KvServer.start(other, { port: Number(address.split(":")[1]) });
      assert.equal(await getValue(c, "g"), "1");
      assert.equal(c.connections, 2);
    } finally {
      await s.shutdown(0);
      await other.close();
    }
  });
});

/**
 * A hand-driven HTTP/2 server: parses the client's frames and answers as `script` says;
 * records what came.
 */
class FakeServer {
  readonly frames: { type: number; flags: number; id: number; payload: Buffer }[] = [];
  readonly decoder = new HpackDecoder();
  sockets: Socket[] = [];
  private constructor(
    readonly server: Server,
    readonly port: number,
  ) {}

  static async start(
    onFrame: (s: FakeServer, sock: Socket, f: FakeServer["frames"][number]) => void,
  ) {
    let fake: FakeServer | undefined;
    const server = createServer((sock) => {
      fake!.sockets.push(sock);
      let buf = Buffer.alloc(0);
      let preface = false;
      sock.on("error", () => {});
      sock.on("data", (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        if (!preface) {
          if (buf.length < h2.CLIENT_PREFACE.length) return;
          assert.ok(buf.subarray(0, h2.CLIENT_PREFACE.length).equals(h2.CLIENT_PREFACE));
          buf = buf.subarray(h2.CLIENT_PREFACE.length);
          preface = true;
        }
        while (buf.length >= 9) {
          const length = buf.readUIntBE(0, 3);
          if (buf.length < 9 + length) break;
          const f = {
            type: buf[3]!,
            flags: buf[4]!,
            id: buf.readUInt32BE(5),
            payload: Buffer.from(buf.subarray(9, 9 + length)),
          };
          buf = buf.subarray(9 + length);
          fake!.frames.push(f);
          onFrame(fake!, sock, f);
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    fake = new FakeServer(server, (server.address() as { port: number }).port);
    return fake;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const settings = (pairs: [number, number][]) => {
  const p = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([k, v], i) => {
    p.writeUInt16BE(k, 6 * i);
    p.writeUInt32BE(v, 6 * i + 2);
  });
  return h2frame(h2.SETTINGS, 0, 0, p);
};
const u32 = (n: number) => {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(n);
  return p;
};
const grpcMessage = (payload: Buffer) =>
  Buffer.concat([Buffer.from([0]), u32(payload.length), payload]);
const OK_HEADERS = encodeHeaderBlock([
  [":status", "200"],
  ["content-type", "application/grpc"],
]);
const OK_TRAILERS = encodeHeaderBlock([["grpc-status", "0"]]);

describe("against a hand-driven HTTP/2 server", () => {
  test("SETTINGS and PING are ACKed, the client's SETTINGS turn push off, grpc-timeout is sent", async () => {
    const fake = await FakeServer.start((_s, sock, f) => {
      if (f.type === h2.SETTINGS && f.flags === 0) {
        sock.write(settings([[h2.SETTINGS_MAX_CONCURRENT_STREAMS, 10]]));
        sock.write(h2frame(h2.PING, 0, 0, Buffer.from("12345678")));
      }
      if (f.type === h2.DATA && (f.flags & h2.FLAG_END_STREAM) !== 0) {
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_HEADERS, f.id, OK_HEADERS));
        sock.write(h2frame(h2.DATA, 0, f.id, grpcMessage(Buffer.from("pong"))));
        sock.write(
          h2frame(h2.HEADERS, h2.FLAG_END_HEADERS | h2.FLAG_END_STREAM, f.id, OK_TRAILERS),
        );
      }
    });
    const c = new LeanGrpcClient(fake.address, 1234);
    try {
      const msgs = await c.call("/t.S/M", Buffer.from("ping"));
      assert.deepEqual(msgs.map(String), ["pong"]);
      await waitFor(
        () => fake.frames.some((f) => f.type === h2.PING && f.flags === h2.FLAG_ACK),
        "the PING ACK",
      );
      const ping = fake.frames.find((f) => f.type === h2.PING)!;
      assert.equal(ping.payload.toString(), "12345678");
      assert.ok(
        fake.frames.some((f) => f.type === h2.SETTINGS && f.flags === h2.FLAG_ACK),
        "SETTINGS ACK",
      );
      const mine = fake.frames.find((f) => f.type === h2.SETTINGS && f.flags === 0)!;
      const values = new Map<number, number>();
      for (let i = 0; i < mine.payload.length; i += 6)
        values.set(mine.payload.readUInt16BE(i), mine.payload.readUInt32BE(i + 2));
      assert.equal(values.get(h2.SETTINGS_ENABLE_PUSH), 0);
      assert.ok((values.get(h2.SETTINGS_INITIAL_WINDOW_SIZE) ?? 0) >= 1 << 20);
      const headers = fake.frames.find((f) => f.type === h2.HEADERS)!;
      const fields: string[] = [];
      fake.decoder.decode(headers.payload, 0, headers.payload.length, fields, 1 << 20);
      const map = new Map<string, string>();
      for (let i = 0; i < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
      assert.equal(map.get(":path"), "/t.S/M");
      assert.equal(map.get("grpc-timeout"), "1234m");
      assert.equal(map.get("te"), "trailers");
      assert.equal(headers.id, 1);
    } finally {
      c.close();
      await fake.close();
    }
  });

  test("frames stay whole when a control frame (PING ACK, WINDOW_UPDATE) starts a new write slab", async () => {
    // Every response is followed by two PINGs, so ACKs interleave with HEADERS and DATA in
    // every turn and some ACK is the frame that fills a 64 KiB slab; request sizes vary so
    // that the boundary falls at many offsets. A frame written into the old slab after the
    // new one was taken would corrupt what the server reads.
    const bad: string[] = [];
    let lastId = 0;
    let pings = 0;
    let acks = 0;
    const fake = await FakeServer.start((_s, sock, f) => {
      if (f.type > h2.CONTINUATION || f.payload.length > h2.DEFAULT_MAX_FRAME_SIZE) {
        bad.push(`type ${f.type} length ${f.payload.length}`);
        sock.destroy();
        return;
      }
      if (f.type === h2.HEADERS) {
        if (f.id <= lastId || f.id % 2 !== 1) bad.push(`HEADERS on stream ${f.id} after ${lastId}`);
        lastId = f.id;
      }
      if (f.type === h2.PING && (f.flags & h2.FLAG_ACK) !== 0) {
        if (f.payload.readUInt32BE(0) !== 0x70696e67)
          bad.push(`PING ACK ${f.payload.toString("hex")}`);
        acks++;
      }
      if (f.type === h2.DATA && (f.flags & h2.FLAG_END_STREAM) !== 0) {
        const body = f.payload.subarray(5);
        sock.write(
          Buffer.concat([
            h2frame(h2.WINDOW_UPDATE, 0, 0, u32(f.payload.length)),
            h2frame(h2.HEADERS, h2.FLAG_END_HEADERS, f.id, OK_HEADERS),
            h2frame(h2.DATA, 0, f.id, grpcMessage(Buffer.from(String(body.length)))),
            h2frame(h2.HEADERS, h2.FLAG_END_HEADERS | h2.FLAG_END_STREAM, f.id, OK_TRAILERS),
            h2frame(h2.PING, 0, 0, Buffer.from("ping0000")),
            h2frame(h2.PING, 0, 0, Buffer.from("ping1111")),
          ]),
        );
        pings += 2;
      }
    });
    const c = new LeanGrpcClient(fake.address, 5000);
    try {
      let next = 0;
      const N = 4000;
      const slot = async () => {
        while (next < N) {
          const n = (next++ * 37) % 301;
          const msgs = await c.call("/t.S/M", Buffer.alloc(n, 1));
          assert.deepEqual(msgs.map(String), [String(n)]);
        }
      };
      await Promise.all(Array.from({ length: 16 }, slot));
      await waitFor(() => acks === pings || bad.length > 0, "every PING ACKed");
      assert.deepEqual(bad, []);
    } finally {
      c.close();
      await fake.close();
    }
  });

  test("a request body past the server's stream window waits for its WINDOW_UPDATE", async () => {
    const fake = await FakeServer.start((s, sock, f) => {
      if (f.type === h2.SETTINGS && f.flags === 0)
        sock.write(settings([[h2.SETTINGS_INITIAL_WINDOW_SIZE, 100]]));
      if (f.type === h2.DATA) {
        const got = s.frames.filter((g) => g.type === h2.DATA && g.id === f.id);
        const bytes = got.reduce((n, g) => n + g.payload.length, 0);
        if ((f.flags & h2.FLAG_END_STREAM) === 0) {
          if (bytes === 100) sock.write(h2frame(h2.WINDOW_UPDATE, 0, f.id, u32(1000)));
          return;
        }
        const body = Buffer.concat(got.map((g) => g.payload));
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_HEADERS, f.id, OK_HEADERS));
        sock.write(h2frame(h2.DATA, 0, f.id, grpcMessage(Buffer.from(String(body.length)))));
        sock.write(
          h2frame(h2.HEADERS, h2.FLAG_END_HEADERS | h2.FLAG_END_STREAM, f.id, OK_TRAILERS),
        );
      }
    });
    const c = new LeanGrpcClient(fake.address, 5000);
    try {
      // The first call goes out before the server's SETTINGS (the default window holds it).
      assert.deepEqual((await c.call("/t.S/M", Buffer.alloc(1, 1))).map(String), ["6"]);
      const msgs = await c.call("/t.S/M", Buffer.alloc(300, 1));
      assert.deepEqual(msgs.map(String), ["305"]);
      const data = fake.frames.filter((f) => f.type === h2.DATA && f.id === 3);
      assert.ok(data.length >= 2, `${data.length} DATA frames`);
      assert.ok(
        data.every((f) => f.payload.length <= 100 || f !== data[0]),
        "the first frame within the window",
      );
      assert.equal(data[0]!.payload.length, 100);
    } finally {
      c.close();
      await fake.close();
    }
  });

  test("CONTINUATION, a message split across frames, RST_STREAM", async () => {
    const fake = await FakeServer.start((_s, sock, f) => {
      if (f.type !== h2.DATA) return;
      if (f.id === 1) {
        // Trailers in HEADERS + CONTINUATION; the message prefix split over two DATA frames.
        const m = grpcMessage(Buffer.from("hello world"));
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_HEADERS, f.id, OK_HEADERS));
        sock.write(h2frame(h2.DATA, 0, f.id, m.subarray(0, 3)));
        sock.write(h2frame(h2.DATA, 0, f.id, m.subarray(3, 9)));
        sock.write(h2frame(h2.DATA, 0, f.id, m.subarray(9)));
        const t = encodeHeaderBlock([
          ["grpc-status", "5"],
          ["grpc-message", "not%20here"],
        ]);
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_STREAM, f.id, t.subarray(0, 4)));
        sock.write(h2frame(h2.CONTINUATION, h2.FLAG_END_HEADERS, f.id, t.subarray(4)));
      } else sock.write(h2frame(h2.RST_STREAM, 0, f.id, u32(h2.ErrorCode.REFUSED_STREAM)));
    });
    const c = new LeanGrpcClient(fake.address, 5000);
    try {
      await rejectsWith(c.call("/t.S/A", Buffer.from("x")), 5, /A: grpc-status 5 not here/);
      await rejectsWith(
        c.call("/t.S/B", Buffer.from("x")),
        undefined,
        /B: stream reset .*REFUSED_STREAM/,
      );
      assert.deepEqual(
        fake.frames.filter((f) => f.type === h2.HEADERS).map((f) => f.id),
        [1, 3],
      );
    } finally {
      c.close();
      await fake.close();
    }
  });

  test("GOAWAY: calls above its last stream id reject, the rest finish, the next call reconnects", async () => {
    let answer: (() => void) | undefined;
    const fake = await FakeServer.start((s, sock, f) => {
      if (f.type !== h2.DATA) return;
      const reply = (id: number) => {
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_HEADERS, id, OK_HEADERS));
        sock.write(h2frame(h2.DATA, 0, id, grpcMessage(Buffer.from(`on ${s.sockets.length}`))));
        sock.write(h2frame(h2.HEADERS, h2.FLAG_END_HEADERS | h2.FLAG_END_STREAM, id, OK_TRAILERS));
      };
      if (s.sockets.length > 1) reply(f.id);
      else if (f.id === 3) {
        const goaway = Buffer.alloc(8);
        goaway.writeUInt32BE(1, 0); // stream 1 will still be answered; 3 will not
        sock.write(h2frame(h2.GOAWAY, 0, 0, goaway));
        answer = () => reply(1);
      }
    });
    const c = new LeanGrpcClient(fake.address, 5000);
    try {
      const first = c.call("/t.S/A", Buffer.from("x"));
      const second = c.call("/t.S/B", Buffer.from("x"));
      await rejectsWith(second, undefined, /B: GOAWAY from .*NO_ERROR/);
      assert.equal(c.connected, false);
      answer!();
      assert.deepEqual((await first).map(String), ["on 1"]);
      assert.deepEqual((await c.call("/t.S/C", Buffer.from("x"))).map(String), ["on 2"]);
      assert.equal(c.connections, 2);
    } finally {
      c.close();
      await fake.close();
    }
  });
});

const etcd = etcdOnPath();

describe("against etcd", { skip: etcd === undefined ? ETCD_MISSING : false }, () => {
  let cluster: EtcdCluster | undefined;
  let dir: ReturnType<typeof tempDir>;
  let address = "";

  before(async () => {
    dir = tempDir("lean-grpc-etcd-");
    cluster = await EtcdCluster.start(dir.path, 1);
    address = cluster.clientAddress("n1");
    const c = new LeanGrpcClient(address, 2000);
    try {
      await waitFor(
        () =>
          c.call(ETCD_RANGE, encodeRange(b("x"), undefined, 0, false)).then(
            () => true,
            () => false,
          ),
        "etcd to serve",
        30_000,
      );
    } finally {
      c.close();
    }
  });

  after(async () => {
    await cluster?.stop();
    dir?.remove();
  });

  test("Put, Range of one key and of many (HPACK with the dynamic table), 300 at once", async () => {
    const c = new LeanGrpcClient(address, 5000);
    try {
      decodeResponseHeader(single(await c.call(ETCD_PUT, encodePut(b("a"), b("1")))));
      const one = decodeRange(
        single(await c.call(ETCD_RANGE, encodeRange(b("a"), undefined, 0, false))),
      );
      assert.deepEqual(
        one.kvs.map(([, value]) => Buffer.from(value).toString()),
        ["1"],
      );
      const n = 300;
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          c.call(ETCD_PUT, encodePut(b(`m/${String(i).padStart(3, "0")}`), ROW_VALUE)),
        ),
      );
      const got = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          c.call(
            ETCD_RANGE,
            encodeRange(b(`m/${String(i).padStart(3, "0")}`), undefined, 0, false),
          ),
        ),
      );
      for (const msgs of got) assert.equal(decodeRange(single(msgs)).kvs.length, 1);
      // ~300 KiB in one message: across many DATA frames.
      const all = decodeRange(
        single(await c.call(ETCD_RANGE, encodeRange(b("m/"), b("m0"), 0, false))),
      );
      assert.equal(all.kvs.length, n);
      await rejectsWith(
        c.call("/etcdserverpb.KV/Nope", new Uint8Array(0)),
        12,
        /Nope: grpc-status 12/,
      );
    } finally {
      c.close();
    }
  });
});

function single(messages: Buffer[]): Buffer {
  assert.equal(messages.length, 1);
  return messages[0]!;
}
