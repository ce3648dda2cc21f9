/**
 * TLS, mutual TLS and bearer-token modes: the right calls succeed and the wrong ones fail
 * with the right code (UNAVAILABLE for a failed handshake, UNAUTHENTICATED for a missing
 * or wrong token), and a refused call stores nothing. Certificates are made with openssl
 * at test time. The last test runs the CLI with the same material given as files.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, type TestContext, test } from "node:test";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import { isKvClientError, KvClient, type KvClientOptions, status } from "../../src/client/index.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { KvServer, type KvServerOptions } from "../../src/server/index.js";
import { runCli, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { makeTlsFiles, type TlsFiles } from "../support/tls-certs.js";

const dir = tempDir("kv-tls-");
let tls: TlsFiles;

before(() => {
  tls = makeTlsFiles(dir.path);
});
after(() => dir.remove());

async function serve(
  t: TestContext,
  options: KvServerOptions,
): Promise<{ server: KvServer; store: KvStore }> {
  const store = await open("/db", { fs: new MemoryFileSystem() });
  const server = await KvServer.start(store, { port: 0, ...options });
  t.after(async () => {
    await server.shutdown(0);
    await store.close();
  });
  return { server, store };
}

function connect(t: TestContext, server: KvServer, options: KvClientOptions): KvClient {
  const client = new KvClient(server.address, { timeoutMs: 5000, ...options });
  t.after(() => client.close());
  return client;
}

async function refused(call: Promise<unknown>, code: status): Promise<void> {
  await assert.rejects(call, (err: unknown) => {
    assert.ok(isKvClientError(err), String(err));
    assert.equal(err.codeName, status[code], err.message);
    return true;
  });
}

test("TLS: a client trusting the CA succeeds; plaintext and an untrusting client fail", async (t) => {
  const { server } = await serve(t, { tls: { cert: tls.serverCert, key: tls.serverKey } });
  const good = connect(t, server, { tls: { ca: tls.caCert } });
  await good.put("k", "v");
  assert.equal((await good.get("k"))?.toString(), "v");
  assert.equal((await good.scanAll()).length, 1);
  await refused(connect(t, server, {}).put("plain", "x"), status.UNAVAILABLE);
  await refused(
    connect(t, server, { tls: { ca: tls.otherCaCert } }).put("other", "x"),
    status.UNAVAILABLE,
  );
  assert.equal((await good.scanAll()).length, 1, "the refused clients stored nothing");
});

test("mutual TLS: only clients with a certificate from the client CA get in", async (t) => {
  const { server } = await serve(t, {
    tls: { cert: tls.serverCert, key: tls.serverKey, clientCa: tls.caCert },
  });
  const good = connect(t, server, {
    tls: { ca: tls.caCert, cert: tls.clientCert, key: tls.clientKey },
  });
  await good.put("k", "v");
  assert.equal((await good.get("k"))?.toString(), "v");
  await refused(
    connect(t, server, { tls: { ca: tls.caCert } }).put("nocert", "x"),
    status.UNAVAILABLE,
  );
  await refused(
    connect(t, server, {
      tls: { ca: tls.caCert, cert: tls.otherClientCert, key: tls.otherClientKey },
    }).put("othercert", "x"),
    status.UNAVAILABLE,
  );
  assert.deepEqual(
    (await good.scanAll()).map(([k]) => k.toString()),
    ["k"],
  );
});

test("bearer token: missing or wrong token gets UNAUTHENTICATED; health stays open", async (t) => {
  const { server, store } = await serve(t, { authToken: "s3cret-token" });
  const good = connect(t, server, { authToken: "s3cret-token" });
  await good.put("k", "v");
  const sequence = store.stats().lastSequence;
  for (const options of [{}, { authToken: "wrong" }, { authToken: "s3cret-token-and-more" }]) {
    const bad = connect(t, server, options);
    await refused(bad.put("bad", "x"), status.UNAUTHENTICATED);
    await refused(bad.get("k"), status.UNAUTHENTICATED);
    await refused(bad.delete("k"), status.UNAUTHENTICATED);
    await refused(bad.write([{ type: "put", key: "bad", value: "x" }]), status.UNAUTHENTICATED);
    await refused(bad.scanAll(), status.UNAUTHENTICATED);
  }
  assert.equal(store.stats().lastSequence, sequence, "refused calls stored nothing");
  assert.equal((await good.get("k"))?.toString(), "v");

  const raw = new Client(server.address, credentials.createInsecure());
  t.after(() => raw.close());
  const health = await new Promise<Buffer>((resolve, reject) => {
    raw.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.alloc(0),
      new Metadata(),
      {},
      (err, res) => (err === null && res !== undefined ? resolve(res) : reject(err)),
    );
  });
  assert.deepEqual([...health], [0x08, 0x01], "SERVING, without a token");
});

test("CLI: serve and the client commands read TLS material and the token from files", async (t) => {
  const file = (name: string, text: string) => {
    const path = join(dir.path, name);
    writeFileSync(path, text);
    return path;
  };
  const token = file("token", "file-token\n");
  const wrongToken = file("wrong-token", "nope\n");
  const server = await startServer(join(dir.path, "cli-data"), [
    "--tls-cert",
    file("s.crt", tls.serverCert),
    "--tls-key",
    file("s.key", tls.serverKey),
    "--tls-client-ca",
    file("ca.crt", tls.caCert),
    "--auth-token-file",
    token,
  ]);
  t.after(() => server.stop("SIGKILL"));
  const common = [
    "--addr",
    server.address,
    "--tls-ca",
    join(dir.path, "ca.crt"),
    "--tls-cert",
    file("c.crt", tls.clientCert),
    "--tls-key",
    file("c.key", tls.clientKey),
  ];
  const put = await runCli(["put", ...common, "--auth-token-file", token, "k", "v"]);
  assert.equal(put.code, 0, put.stderr);
  const get = await runCli(["get", ...common, "--auth-token-file", token, "k"]);
  assert.deepEqual([get.code, get.stdout], [0, "v\n"]);
  const wrong = await runCli(["get", ...common, "--auth-token-file", wrongToken, "k"]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /UNAUTHENTICATED/);
  const noCert = await runCli([
    "get",
    "--addr",
    server.address,
    "--tls-ca",
    join(dir.path, "ca.crt"),
    "--auth-token-file",
    token,
    "k",
  ]);
  assert.equal(noCert.code, 1);
  assert.match(noCert.stderr, /UNAVAILABLE/);
  assert.equal(await server.stop(), 0);
});
