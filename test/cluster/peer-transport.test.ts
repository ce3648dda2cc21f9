/**
 * The gRPC peer transport against the PeerTransport contract (src/replication/
 * peer-transport.ts): order, batching, loss and unreachable reports, envelope refusal,
 * snapshots with back-pressure on a connection of their own, TLS and mutual TLS, the dial
 * override test hook, Discover. Two or three transports in this process, fake handlers.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import type { PeerTransportEvent } from "../../src/cluster/peer-events.js";
import {
  GrpcPeerTransport,
  type GrpcPeerTransportOptions,
} from "../../src/cluster/peer-transport.js";
import { KvError } from "../../src/errors.js";
import type { Message } from "../../src/raft/types.js";
import type {
  OutgoingSnapshot,
  PeerEnvelope,
  PeerHandler,
  SnapshotSink,
} from "../../src/replication/peer-transport.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { tempDir } from "../support/temp-dir.js";
import { makeTlsFiles, type TlsFiles } from "../support/tls-certs.js";
import { waitFor } from "../support/wait-for.js";

const CLUSTER = 0xc1;

function msg(from: number, to: number, index: number, bytes = 0): Message {
  return {
    type: index === 0 ? "heartbeat" : "app",
    to,
    from,
    term: 1,
    logTerm: 1,
    index,
    entries: bytes === 0 ? [] : [{ term: 1, index, type: "normal", data: new Uint8Array(bytes) }],
    commit: 0,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: new Uint8Array(0),
  };
}

interface Recorder {
  handler: PeerHandler;
  received: { envelope: PeerEnvelope; messages: Message[] }[];
  unreachable: number[];
  refuse: boolean;
  sinkFactory?: (message: Message) => SnapshotSink;
}

function recorder(): Recorder {
  const r: Recorder = {
    received: [],
    unreachable: [],
    refuse: false,
    handler: {
      receive: (envelope, messages) => {
        if (r.refuse) throw new KvError("FAILED_PRECONDITION", "message refused: another cluster");
        r.received.push({ envelope, messages: [...messages] });
      },
      receiveSnapshot: async (_envelope, message) => {
        if (r.refuse) throw new KvError("FAILED_PRECONDITION", "message refused: removed");
        if (r.sinkFactory === undefined) throw new Error("no sink");
        return r.sinkFactory(message);
      },
      unreachable: (to) => r.unreachable.push(to),
    },
  };
  return r;
}

async function node(
  id: number,
  extra: Partial<GrpcPeerTransportOptions> = {},
): Promise<{ t: GrpcPeerTransport; r: Recorder; address: string; events: PeerTransportEvent[] }> {
  const events: PeerTransportEvent[] = [];
  const t = await GrpcPeerTransport.listen({
    port: 0,
    pingIntervalMs: 100,
    onEvent: (e) => events.push(e),
    ...extra,
  });
  const r = recorder();
  t.start({ clusterId: CLUSTER, memberId: id }, r.handler);
  return { t, r, address: `127.0.0.1:${t.port}`, events };
}

function delivered(r: Recorder): Message[] {
  return r.received.flatMap((b) => b.messages);
}

/** A port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function snapshotOf(files: Map<string, Uint8Array>, reads: { count: number }): OutgoingSnapshot {
  const infos = [...files].map(([name, data]) => ({ name, size: data.length, crc32c: 0 }));
  return {
    message: {
      ...msg(1, 2, 0),
      type: "snap",
      snapshot: {
        metadata: { index: 10, term: 1, confState: { voters: [1, 2], learners: [] } },
        data: new Uint8Array([1, 2, 3]),
      },
    },
    files: infos,
    bytes: infos.reduce((a, f) => a + f.size, 0),
    read: async (file, offset, length) => {
      reads.count++;
      return files.get(file)!.subarray(offset, offset + length);
    },
  };
}

/** A sink collecting files, whose writes wait while `gate` is closed. */
function collectingSink(): {
  sink: SnapshotSink;
  files: Map<string, Buffer[]>;
  hold: () => void;
  release: () => void;
  finished: boolean;
  aborted: boolean;
  writes: number;
  failFinish: boolean;
} {
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const s = {
    files: new Map<string, Buffer[]>(),
    finished: false,
    aborted: false,
    writes: 0,
    failFinish: false,
    hold: () => {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release: () => {
      gate = undefined;
      open?.();
    },
    sink: {
      write: async (file: string, data: Uint8Array) => {
        s.writes++;
        if (gate !== undefined) await gate;
        const list = s.files.get(file) ?? [];
        list.push(Buffer.from(data));
        s.files.set(file, list);
      },
      finish: async () => {
        if (s.failFinish) throw new KvError("CORRUPTION", "checksum mismatch");
        s.finished = true;
      },
      abort: async () => {
        s.aborted = true;
      },
    } satisfies SnapshotSink,
  };
  return s;
}

describe("plaintext", () => {
  test("messages arrive in order, batched, with their envelope", async (t) => {
    const a = await node(1);
    const b = await node(2);
    t.after(() => Promise.all([a.t.close(), b.t.close()]));
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    let index = 1;
    for (let i = 0; i < 200; i++) {
      const batch: Message[] = [];
      for (let j = 0; j < 5; j++) batch.push(msg(1, 2, index++, (i * 7 + j) % 300));
      a.t.send(2, batch);
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => delivered(b.r).length === 1000, "1000 messages");
    assert.deepEqual(
      delivered(b.r).map((m) => m.index),
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
    // A send's messages leave together: never more batches than sends.
    assert.ok(b.r.received.length <= 200, `${b.r.received.length} batches for 200 sends`);
    assert.ok(b.r.received.every((x) => x.messages.length % 5 === 0));
    for (const { envelope } of b.r.received) {
      assert.deepEqual(envelope, { clusterId: CLUSTER, from: 1, to: 2 });
    }
    assert.equal(delivered(b.r)[3]!.entries[0]!.data.length, 3);
    assert.deepEqual(a.r.unreachable, []);
    assert.ok(a.events.some((e) => e.type === "peer-connected" && e.to === 2));
    await waitFor(() => a.t.stats().get(2)?.rttMs !== undefined, "a round-trip time");
  });

  test("a send's batch is on the wire when send returns: a sender that then holds its event loop does not hold it", async (t) => {
    // The receiver runs on an event loop of its own (a worker thread): a raw HTTP/2 server
    // that sends its SETTINGS and reports when bytes arrive, timed on the shared clock.
    const worker = new Worker(
      `const { parentPort } = require("node:worker_threads");
       const net = require("node:net");
       const server = net.createServer((s) => {
         s.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
         s.on("data", (d) => parentPort.postMessage({ at: performance.timeOrigin + performance.now(), bytes: d.length }));
       });
       server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));`,
      { eval: true },
    );
    t.after(() => worker.terminate());
    const arrivals: { at: number; bytes: number }[] = [];
    const port = await new Promise<number>((resolve) => {
      worker.on("message", (m: { port?: number; at?: number; bytes?: number }) => {
        if (m.port !== undefined) resolve(m.port);
        else arrivals.push({ at: m.at!, bytes: m.bytes! });
      });
    });
    const a = await node(1);
    t.after(() => a.t.close());
    a.t.setPeers([{ id: 2, peerAddress: `127.0.0.1:${port}` }]);
    a.t.send(2, [msg(1, 2, 1, 10)]);
    await waitFor(() => a.t.stats().get(2)?.connected === true && arrivals.length > 0, "connected");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = arrivals.length;
    const now = () => performance.timeOrigin + performance.now();
    a.t.send(2, [msg(1, 2, 2, 10)]);
    const held = now() + 300;
    while (now() < held) {
      // The event loop is held, as by a Raft log write or an apply after a Ready's send.
    }
    await waitFor(() => arrivals.length > before, "the second batch");
    const first = arrivals[before]!;
    assert.ok(
      first.at < held,
      `arrived ${(first.at - held).toFixed(1)} ms after the loop was free`,
    );
  });

  test("an unreachable peer loses the messages, is reported, and is reached once it listens", async (t) => {
    const a = await node(1);
    t.after(() => a.t.close());
    const port = await deadPort();
    a.t.setPeers([{ id: 2, peerAddress: `127.0.0.1:${port}` }]);
    a.t.send(2, [msg(1, 2, 1)]);
    await waitFor(() => a.r.unreachable.includes(2), "an unreachable report");
    // During the back-off, sends are dropped and reported at once.
    const before = a.r.unreachable.length;
    a.t.send(2, [msg(1, 2, 2)]);
    await waitFor(() => a.r.unreachable.length > before, "another report");
    // Messages to a member not in the peers are reported too.
    a.t.send(9, [msg(1, 9, 1)]);
    await waitFor(() => a.r.unreachable.includes(9), "a report for an unknown member");
    // Sending never throws, whatever the state.
    assert.doesNotThrow(() => a.t.send(2, []));
    // The peer starts: after the back-off, sends reach it.
    const b = await node(2, { port });
    t.after(() => b.t.close());
    for (let i = 0; delivered(b.r).length === 0; i++) {
      a.t.send(2, [msg(1, 2, 100 + i)]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (i > 500) assert.fail("never delivered after the peer came up");
    }
  });

  test("a refused envelope ends the stream with FAILED_PRECONDITION, reported on both sides", async (t) => {
    const a = await node(1);
    const b = await node(2);
    t.after(() => Promise.all([a.t.close(), b.t.close()]));
    b.r.refuse = true;
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    a.t.send(2, [msg(1, 2, 1)]);
    await waitFor(() => a.events.some((e) => e.type === "peer-refused"), "a refusal");
    const refusal = a.events.find((e) => e.type === "peer-refused");
    assert.ok(refusal?.type === "peer-refused");
    assert.equal(refusal.code, 9); // FAILED_PRECONDITION
    assert.match(refusal.message, /another cluster/);
    await waitFor(() => a.r.unreachable.includes(2), "unreachable after the refusal");
    assert.equal(b.r.received.length, 0);
    assert.ok(b.events.some((e) => e.type === "peer-call-refused" && e.code === 9));
  });

  test("a closed transport delivers nothing more and its peers see it unreachable", async (t) => {
    const a = await node(1);
    const b = await node(2);
    t.after(() => Promise.all([a.t.close(), b.t.close()]));
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    a.t.send(2, [msg(1, 2, 1)]);
    await waitFor(() => delivered(b.r).length === 1, "the first message");
    await b.t.close();
    a.t.send(2, [msg(1, 2, 2)]);
    await waitFor(() => a.r.unreachable.includes(2), "unreachable after the peer closed");
    assert.equal(delivered(b.r).length, 1);
  });

  test("a snapshot streams its files in chunks with back-pressure, on its own connection", async (t) => {
    const a = await node(1, { snapshotChunkBytes: 64 * 1024 });
    const b = await node(2);
    t.after(() => Promise.all([a.t.close(), b.t.close()]));
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    const big = Buffer.alloc(48 << 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    const files = new Map<string, Uint8Array>([
      ["000001.sst", big],
      ["empty", new Uint8Array(0)],
      ["MANIFEST", Buffer.from("manifest")],
    ]);
    const sink = collectingSink();
    let snapMessage: Message | undefined;
    b.r.sinkFactory = (m) => {
      snapMessage = m;
      return sink.sink;
    };
    sink.hold();
    const reads = { count: 0 };
    let settled = false;
    const sending = a.t.sendSnapshot(2, snapshotOf(files, reads)).finally(() => {
      settled = true;
    });
    await waitFor(() => sink.writes >= 1, "the first chunk at the receiver");
    // The receiver does not take more: the sender stops reading its files well before
    // the end (flow-control windows and socket buffers hold the rest).
    let last = -1;
    await waitFor(async () => {
      const now = reads.count;
      const stable = now === last;
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return stable;
    }, "the sender to stall");
    const chunks = (48 << 20) / (64 * 1024);
    assert.ok(reads.count < chunks / 2, `${reads.count} of ${chunks} chunks read while held`);
    assert.equal(settled, false);
    // Messages (heartbeats) still flow while the snapshot is stuck.
    a.t.send(2, [msg(1, 2, 0)]);
    await waitFor(() => delivered(b.r).length === 1, "a heartbeat beside the snapshot");
    sink.release();
    await sending;
    assert.equal(sink.finished, true);
    assert.equal(snapMessage?.type, "snap");
    assert.equal(snapMessage?.snapshot?.metadata.index, 10);
    assert.deepEqual(Buffer.concat(sink.files.get("000001.sst")!), big);
    assert.deepEqual(Buffer.concat(sink.files.get("empty")!), Buffer.alloc(0));
    assert.equal(Buffer.concat(sink.files.get("MANIFEST")!).toString(), "manifest");
    assert.equal(reads.count, chunks + 1);
  });

  test("a snapshot the receiver refuses or fails to finish rejects; a broken stream aborts the sink", async (t) => {
    const a = await node(1);
    const b = await node(2);
    t.after(() => Promise.all([a.t.close(), b.t.close()]));
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    const files = new Map<string, Uint8Array>([["f", Buffer.alloc(1000, 7)]]);
    b.r.refuse = true;
    await assert.rejects(
      a.t.sendSnapshot(2, snapshotOf(files, { count: 0 })),
      /FAILED_PRECONDITION/,
    );
    b.r.refuse = false;
    const failing = collectingSink();
    failing.failFinish = true;
    b.r.sinkFactory = () => failing.sink;
    await assert.rejects(a.t.sendSnapshot(2, snapshotOf(files, { count: 0 })), /checksum/);
    assert.equal(failing.aborted, true);
    // The sender dies mid-stream: the receiver aborts its sink.
    const held = collectingSink();
    held.hold();
    b.r.sinkFactory = () => held.sink;
    const c = await node(3);
    c.t.setPeers([{ id: 2, peerAddress: b.address }]);
    const sending = c.t.sendSnapshot(
      2,
      snapshotOf(new Map([["f", Buffer.alloc(4 << 20)]]), { count: 0 }),
    );
    await waitFor(() => held.writes >= 1, "a chunk at the receiver");
    await c.t.close();
    await assert.rejects(sending);
    held.release();
    await waitFor(() => held.aborted, "the receiver's sink aborted");
    assert.equal(held.finished, false);
  });

  test("the dial override (test hook) routes a peer's traffic through a proxy, which can cut it", async (t) => {
    const b = await node(2);
    const proxy = await TcpProxy.start(`127.0.0.1:${b.t.port}`);
    const fake = "127.0.0.1:1"; // the advertised address: never dialled
    const a = await node(1, { dialOverrides: new Map([[fake, proxy.address]]) });
    t.after(async () => {
      await Promise.all([a.t.close(), b.t.close()]);
      await proxy.close();
    });
    a.t.setPeers([{ id: 2, peerAddress: fake }]);
    a.t.send(2, [msg(1, 2, 1)]);
    await waitFor(() => delivered(b.r).length === 1, "delivery through the proxy");
    assert.ok(proxy.connections > 0);
    proxy.cut();
    const n = delivered(b.r).length;
    for (let i = 0; i < 20; i++) {
      a.t.send(2, [msg(1, 2, 2 + i)]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(delivered(b.r).length, n);
    await waitFor(() => a.r.unreachable.includes(2), "unreachable while cut");
    proxy.heal();
    for (let i = 0; delivered(b.r).length === n; i++) {
      a.t.send(2, [msg(1, 2, 100 + i)]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (i > 500) assert.fail("never delivered after healing");
    }
  });

  test("Discover answers a joining member's IDs by name and peer address, from the first member that knows it", async (t) => {
    const b = await node(2);
    t.after(() => b.t.close());
    b.t.setDiscoverer((name, peerAddress) => {
      if (name !== "n4" || peerAddress !== "127.0.0.1:9") {
        throw new KvError("FAILED_PRECONDITION", `no member ${name} at ${peerAddress}`);
      }
      return {
        clusterId: CLUSTER,
        memberId: 44,
        responderId: 2,
        members: [{ id: 2, peerAddress: b.address }],
      };
    });
    const dead = `127.0.0.1:${await deadPort()}`;
    const ids = await GrpcPeerTransport.discover(
      [dead, b.address],
      {
        name: "n4",
        peerAddress: "127.0.0.1:9",
      },
      {},
    );
    assert.deepEqual(ids, {
      clusterId: CLUSTER,
      memberId: 44,
      responderId: 2,
      members: [{ id: 2, peerAddress: b.address }],
    });
    // A member that does not know the joiner (it has not applied the add yet) does not
    // decide: the next one that knows it answers.
    const c = await node(3);
    t.after(() => c.t.close());
    c.t.setDiscoverer((name, peerAddress) => {
      throw new KvError("FAILED_PRECONDITION", `no member ${name} at ${peerAddress}`);
    });
    const past = await GrpcPeerTransport.discover(
      [c.address, b.address],
      { name: "n4", peerAddress: "127.0.0.1:9" },
      {},
    );
    assert.equal(past.memberId, 44);
    await assert.rejects(
      GrpcPeerTransport.discover(
        [c.address, b.address],
        { name: "n5", peerAddress: "127.0.0.1:9" },
        {},
      ),
      (err: unknown) => err instanceof KvError && err.code === "FAILED_PRECONDITION",
    );
    await assert.rejects(
      GrpcPeerTransport.discover([dead], { name: "n4", peerAddress: "127.0.0.1:9" }, {}),
      (err: unknown) => err instanceof KvError && err.code === "UNAVAILABLE",
    );
  });
});

describe("TLS", () => {
  let dir: { path: string; remove: () => void };
  let files: TlsFiles;
  before(() => {
    dir = tempDir("kv-peer-tls-");
    files = makeTlsFiles(dir.path);
  });
  after(() => dir.remove());

  const tlsOf = (cert: string, key: string, ca: string) => ({ cert, key, ca });

  test("members with certificates of the cluster's CA talk; a peer without one, or of another CA, is refused", async (t) => {
    const good = tlsOf(files.peerCert, files.peerKey, files.caCert);
    const b = await node(2, { tls: good });
    const a = await node(1, { tls: good });
    // Trusts the server, presents no certificate of the cluster's CA.
    const stranger = await node(3, {
      tls: tlsOf(files.otherPeerCert, files.otherPeerKey, files.caCert),
    });
    t.after(() => Promise.all([a.t.close(), b.t.close(), stranger.t.close()]));
    a.t.setPeers([{ id: 2, peerAddress: b.address }]);
    a.t.send(2, [msg(1, 2, 1)]);
    await waitFor(() => delivered(b.r).length === 1, "delivery over mutual TLS");
    stranger.t.setPeers([{ id: 2, peerAddress: b.address }]);
    stranger.t.send(2, [msg(3, 2, 1)]);
    await waitFor(() => stranger.r.unreachable.includes(2), "the stranger refused");
    assert.ok(delivered(b.r).every((m) => m.from === 1));
    // A plaintext peer gets nowhere either.
    const plain = await node(4);
    t.after(() => plain.t.close());
    plain.t.setPeers([{ id: 2, peerAddress: b.address }]);
    plain.t.send(2, [msg(4, 2, 1)]);
    await waitFor(() => plain.r.unreachable.includes(2), "the plaintext peer refused");
    assert.ok(delivered(b.r).every((m) => m.from === 1));
    // A member that does not trust the server's CA does not send to it.
    const wary = await node(5, { tls: tlsOf(files.peerCert, files.peerKey, files.otherCaCert) });
    t.after(() => wary.t.close());
    wary.t.setPeers([{ id: 2, peerAddress: b.address }]);
    wary.t.send(2, [msg(5, 2, 1)]);
    await waitFor(() => wary.r.unreachable.includes(2), "the server not trusted");
    assert.ok(delivered(b.r).every((m) => m.from === 1));
  });
});
