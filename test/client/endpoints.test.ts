/**
 * The one address syntax of the client and every command (src/client/endpoints.ts):
 * HOST:PORT, http://HOST:PORT, https://HOST:PORT, comma lists; no port, another scheme,
 * a path, a bare IPv6 address or a mixed list refused with the expected form named.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AdminClient } from "../../src/client/admin-client.js";
import { parseEndpoint, parseEndpointList, parseEndpoints } from "../../src/client/endpoints.js";
import { KvClient } from "../../src/client/kv-client.js";

test("HOST:PORT, http:// and https:// addresses; IPv6 in brackets; lists", () => {
  assert.deepEqual(parseEndpoint("127.0.0.1:50051"), {
    address: "127.0.0.1:50051",
    scheme: undefined,
  });
  assert.deepEqual(parseEndpoint("http://node-1.example:2379"), {
    address: "node-1.example:2379",
    scheme: "http",
  });
  assert.deepEqual(parseEndpoint("HTTPS://h:1/"), { address: "h:1", scheme: "https" });
  assert.deepEqual(parseEndpoint("[::1]:50051"), { address: "[::1]:50051", scheme: undefined });
  assert.deepEqual(parseEndpoints("a:1, b:2,,a:1"), ["a:1", "b:2"]);
  assert.deepEqual(parseEndpoints(["http://a:1", "http://b:2,http://c:3"]), ["a:1", "b:2", "c:3"]);
});

test("a malformed address is refused with the expected form", () => {
  const cases: [string, RegExp][] = [
    ["127.0.0.1", /no port/],
    ["localhost:", /no port/],
    ["grpc://127.0.0.1:50051", /the scheme 'grpc' is not taken/],
    ["unix:///tmp/sock", /the scheme 'unix' is not taken/],
    ["http://h:1/kv", /no path/],
    ["::1:50051", /IPv6 address goes in brackets/],
    ["h:0", /the port '0' is not a number from 1 to 65535/],
    ["h:65536", /not a number from 1 to 65535/],
    ["h:http", /the port 'http'/],
    [":50051", /no host/],
  ];
  for (const [text, why] of cases) {
    assert.throws(
      () => parseEndpoint(text),
      (err: unknown) => {
        assert.ok(err instanceof TypeError, text);
        assert.match(err.message, why, text);
        assert.match(
          err.message,
          new RegExp(`^bad address '${text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}'`),
        );
        assert.match(err.message, /expected HOST:PORT, http:\/\/HOST:PORT or https:\/\/HOST:PORT/);
        return true;
      },
    );
  }
  assert.throws(() => parseEndpointList(" , "), /no address given/);
  assert.throws(() => parseEndpointList("http://a:1,https://b:2"), /mix http:\/\/ and https:\/\//);
});

test("the clients refuse a bad address before connecting, and http:// with TLS options", () => {
  assert.throws(() => new KvClient("127.0.0.1"), /no port/);
  assert.throws(() => new KvClient("a:1,b"), /bad address 'b': no port/);
  assert.throws(() => new AdminClient("127.0.0.1"), /no port/);
  assert.throws(() => new AdminClient("a:1,b:2"), /acts on one node/);
  assert.throws(
    () => new KvClient("http://a:1", { tls: {} }),
    /http:\/\/ addresses with TLS options/,
  );
  assert.deepEqual(new KvClient("https://a:1,https://b:2").endpoints, ["a:1", "b:2"]);
  assert.equal(new AdminClient("http://a:1").address, "a:1");
});
