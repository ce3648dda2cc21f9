/**
 * What a KvClient call that fails tells its caller, driven through real connections
 * (src/client/call-failure.ts, call-attempts.ts): a refused connection, a port that does
 * not speak HTTP/2, a port that accepts and never speaks, a service the port does not
 * serve, a request and an answer over a size limit, a deadline, an unknown outcome
 * whatever the server's words; and with several endpoints: every member down reported
 * before the deadline naming each address, a live member's "not proposed" shown before
 * the refused connections. No message holds grpc-js's own texts. Each case runs on both
 * transports (lean and grpc-js), which must fail alike.
 */
import assert from "node:assert/strict";
import { createServer as httpServer } from "node:http";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from "@grpc/grpc-js";
import { KvClient } from "../../src/client/kv-client.js";
import { isKvClientError, type KvClientError } from "../../src/client/kv-client-error.js";
import type { GetResponse, PutResponse } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition } from "../../src/proto/kv-service-definition.js";
import { CLIENT_TRANSPORTS } from "../support/client-transports.js";

/** Texts of grpc-js (and of the server's internals) a message must never hold. */
const FOREIGN =
  /No connection established|Resolution note|Waiting for LB pick|Deadline exceeded after|Received message larger than max|remote_addr|signal fired|Last error/;

async function failure(work: Promise<unknown>): Promise<KvClientError> {
  try {
    await work;
  } catch (err) {
    assert.ok(isKvClientError(err), String(err));
    assert.doesNotMatch(err.message, FOREIGN);
    return err;
  }
  assert.fail("the call succeeded");
}

async function listen(server: NetServer | ReturnType<typeof httpServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

async function deadAddress(): Promise<string> {
  const s = createServer();
  const address = await listen(s);
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return address;
}

type Handler<Res> = (call: ServerUnaryCall<unknown, Res>, done: sendUnaryData<Res>) => void;

/** A grpc-js server of kv.v1.KvService whose Put and Get do what the test says. */
class FakeKv {
  put: Handler<PutResponse> = (_call, done) => done(null, { $typeName: "kv.v1.PutResponse" });
  get: Handler<GetResponse> = (_call, done) =>
    done(null, { $typeName: "kv.v1.GetResponse", found: true, value: Buffer.from("v") });
  readonly server: Server;
  address = "";

  constructor(options: Record<string, number> = {}, serve = true) {
    this.server = new Server(options);
    if (serve) {
      this.server.addService(kvServiceDefinition as never, {
        Put: (call: ServerUnaryCall<unknown, PutResponse>, done: sendUnaryData<PutResponse>) =>
          this.put(call, done),
        Get: (call: ServerUnaryCall<unknown, GetResponse>, done: sendUnaryData<GetResponse>) =>
          this.get(call, done),
      });
    }
  }

  async start(): Promise<this> {
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) =>
        err === null ? resolve(p) : reject(err),
      ),
    );
    this.address = `127.0.0.1:${port}`;
    return this;
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

function refusal(code: status, details: string, serverCode?: string) {
  const metadata = new Metadata();
  if (serverCode !== undefined) metadata.set("kv-error", serverCode);
  return { code, details, metadata };
}

for (const transport of CLIENT_TRANSPORTS) {
  const clients: KvClient[] = [];
  function client(
    address: string | string[],
    options: ConstructorParameters<typeof KvClient>[1] = {},
  ) {
    const c = new KvClient(address, { transport, ...options });
    clients.push(c);
    return c;
  }

  describe(`${transport}: one endpoint`, () => {
    const servers: { stop: () => void }[] = [];
    after(() => {
      for (const c of clients) c.close();
      for (const s of servers) s.stop();
    });

    test("a refused connection: nothing was sent, and where", async () => {
      const dead = await deadAddress();
      const e = await failure(client(dead).put("k", "v"));
      assert.equal(e.code, status.UNAVAILABLE);
      assert.equal(e.failure, "no-connection");
      assert.equal(e.neverSent, true);
      assert.equal(e.outcomeUnknown, false);
      assert.equal(
        e.message,
        `UNAVAILABLE: ${dead}: cannot connect: connection refused (is kv-engine running there?); nothing was sent`,
      );
    });

    test("a port that does not speak HTTP/2, and one that accepts and never speaks", async () => {
      const http = httpServer((_req, res) => res.end("hello"));
      servers.push({ stop: () => http.close() });
      const e = await failure(client(await listen(http), { timeoutMs: 2000 }).get("k"));
      assert.equal(e.failure, "no-connection");
      assert.match(e.message, /does not speak HTTP\/2 \(is this a kv-engine client port\?\)/);
      const sockets: Socket[] = [];
      const silent = createServer((s) => sockets.push(s));
      servers.push({
        stop: () => {
          for (const s of sockets) s.destroy();
          silent.close();
        },
      });
      const quiet = await failure(client(await listen(silent), { timeoutMs: 300 }).put("k", "v"));
      assert.equal(quiet.failure, "no-connection");
      assert.match(quiet.message, /no connection within the deadline \(\d+ ms\); nothing was sent/);
    });

    test("a service the port does not serve (a peer port)", async () => {
      const none = await new FakeKv({}, false).start();
      servers.push(none);
      const e = await failure(client(none.address).get("k"));
      assert.equal(e.code, status.UNIMPLEMENTED);
      assert.match(
        e.message,
        new RegExp(
          `^UNIMPLEMENTED: ${none.address}: not a kv-engine client port \\(it may be a cluster member's peer port\\)`,
        ),
      );
      const cluster = await failure(client(none.address).memberList());
      assert.match(cluster.message, /serves no cluster service: a single-node server/);
    });

    test("a request over the server's limit, an answer over the client's: the option to raise", async () => {
      const kv = await new FakeKv({ "grpc.max_receive_message_length": 1000 }).start();
      servers.push(kv);
      kv.get = (_call, done) =>
        done(null, { $typeName: "kv.v1.GetResponse", found: true, value: Buffer.alloc(5000) });
      const big = await failure(client(kv.address).put("k", Buffer.alloc(2000)));
      assert.equal(big.code, status.RESOURCE_EXHAUSTED);
      assert.match(
        big.message,
        /the request \(20\d\d bytes\) is over the server's limit of 1000 bytes/,
      );
      assert.match(big.message, /nothing was done; .*raise the server's --max-message-bytes/);
      const answer = await failure(client(kv.address, { maxReceiveMessageBytes: 1024 }).get("k"));
      assert.match(
        answer.message,
        /the answer \(50\d\d bytes\) is over this client's limit of 1024 bytes/,
      );
      assert.match(answer.message, /maxReceiveMessageBytes; the CLI's --max-receive-bytes/);
      // The server's own size refusals get the flag that raises the limit.
      kv.put = (_call, done) =>
        done(
          refusal(
            status.RESOURCE_EXHAUSTED,
            "value is 2000000 bytes; the server's limit is 1048576 (maxValueBytes)",
            "RESOURCE_EXHAUSTED",
          ),
        );
      const value = await failure(client(kv.address).put("k", "v"));
      assert.match(
        value.message,
        /\(maxValueBytes\): nothing was stored; send less, or raise the server's --max-value-bytes$/,
      );
    });

    test("a deadline: a write was sent and may apply; a read just timed out", async () => {
      const kv = await new FakeKv().start();
      servers.push(kv);
      kv.put = () => {}; // never answers
      kv.get = () => {};
      const w = await failure(client(kv.address, { timeoutMs: 300 }).put("k", "v"));
      assert.equal(w.code, status.DEADLINE_EXCEEDED);
      assert.equal(w.failure, "deadline");
      assert.equal(w.outcomeUnknown, true);
      assert.match(
        w.message,
        /no answer within the deadline \(\d+ ms\): the write was sent; it may or may not take effect: read to check/,
      );
      assert.match(w.message, /allow more time \(timeoutMs; the CLI's --timeout-ms\)/);
      const r = await failure(client(kv.address, { timeoutMs: 300 }).get("k"));
      assert.match(r.message, /no answer within the deadline \(\d+ ms\); allow more time/);
      assert.doesNotMatch(r.message, /write/);
    });

    test("an unknown outcome is told in the client's words, whatever the server said", async () => {
      const kv = await new FakeKv().start();
      servers.push(kv);
      kv.put = (_call, done) =>
        done(
          refusal(
            status.UNAVAILABLE,
            "the write was proposed but not applied here before its signal fired",
            "OUTCOME_UNKNOWN",
          ),
        );
      const e = await failure(client(kv.address).put("k", "v"));
      assert.equal(e.outcomeUnknown, true);
      assert.equal(
        e.details,
        "the write was proposed but not applied here before its signal fired",
      );
      assert.match(
        e.message,
        /proposed but not applied when the member answered .*it may or may not take effect: read to check before retrying/,
      );
    });
  });

  describe(`${transport}: several endpoints`, () => {
    let noLeader: FakeKv;
    before(async () => {
      noLeader = await new FakeKv().start();
      noLeader.put = (_call, done) =>
        done(
          refusal(
            status.UNAVAILABLE,
            "not proposed: no leader is known; safe to retry",
            "UNAVAILABLE",
          ),
        );
    });
    after(() => {
      for (const c of clients) c.close();
      noLeader.stop();
    });

    test("every member down: reported at once (not at the deadline), naming each address", async () => {
      const dead = [await deadAddress(), await deadAddress(), await deadAddress()];
      const started = Date.now();
      const e = await failure(client(dead, { timeoutMs: 60_000 }).put("k", "v"));
      const took = Date.now() - started;
      assert.ok(took < 60_000, "the call did not wait for its deadline");
      console.log(`every member down: reported in ${took} ms`);
      assert.equal(e.neverSent, true);
      assert.equal(
        e.message,
        `UNAVAILABLE: ${dead.join(", ")}: cannot connect: connection refused (is kv-engine running there?); nothing was sent`,
      );
      assert.deepEqual(
        e.others.map((o) => o.endpoint),
        dead.slice(1),
      );
    });

    test("a live member's 'not proposed' beats refused connections, which are listed after it", async () => {
      const dead = [await deadAddress(), await deadAddress()];
      const e = await failure(
        client([dead[0]!, noLeader.address, dead[1]!], { timeoutMs: 600 }).put("k", "v"),
      );
      assert.equal(e.notProposed, true);
      assert.equal(e.endpoint, noLeader.address);
      const lines = e.message.split("\n");
      assert.equal(
        lines[0],
        `UNAVAILABLE: ${noLeader.address}: not proposed: no leader is known; safe to retry`,
      );
      assert.equal(
        lines[1],
        `  ${dead.join(", ")}: cannot connect: connection refused (is kv-engine running there?); nothing was sent`,
      );
      assert.equal(lines.length, 2);
    });

    test("a member that accepts and never speaks is left for the next within half the time left", async () => {
      const sockets: Socket[] = [];
      const silent = createServer((s) => sockets.push(s));
      const good = await new FakeKv().start();
      try {
        const c = client([await listen(silent), good.address], { timeoutMs: 2000 });
        await c.put("k", "v"); // a write too: nothing was sent to the silent one
      } finally {
        for (const s of sockets) s.destroy();
        silent.close();
        good.stop();
      }
    });
  });
}
