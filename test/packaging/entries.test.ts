/**
 * The package entries that need optional peer dependencies (kv-engine/server,
 * kv-engine/client; src/entry/) export exactly what the modules their types describe
 * export, and the peer lists agree with package.json; a missing peer is reported by name
 * with the command that installs it. (test/packaging/pack.test.ts installs the package
 * without its peers and checks the errors a user sees.)
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  CLIENT_PEERS,
  MissingPeersError,
  missingPeers,
  requirePeers,
  SERVE_PEERS,
  SERVER_PEERS,
} from "../../src/util/optional-peers.js";

const pkg = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../../package.json", import.meta.url)), "utf8"),
) as {
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  exports: Record<string, { types: string; import: string }>;
};

test("the entries export the same names as the modules their types come from", async () => {
  for (const [entry, real] of [
    ["../../src/entry/server.js", "../../src/server/index.js"],
    ["../../src/entry/client.js", "../../src/client/index.js"],
  ] as const) {
    const a = Object.keys(await import(entry)).sort();
    const b = Object.keys(await import(real)).sort();
    assert.deepEqual(a, b, `${entry} re-exports ${real}`);
  }
  for (const sub of ["./server", "./client"]) {
    const e = pkg.exports[sub]!;
    const name = sub.slice(2);
    assert.equal(e.import, `./dist/src/entry/${name}.js`);
    assert.equal(e.types, `./dist/src/${name}/index.d.ts`);
  }
});

test("the peer lists are package.json's optional peers, which the repository installs", () => {
  const declared = Object.keys(pkg.peerDependencies).sort();
  const listed = [...new Set([...CLIENT_PEERS, ...SERVER_PEERS, ...SERVE_PEERS])].sort();
  assert.deepEqual(listed, declared);
  for (const name of declared) {
    assert.equal(pkg.peerDependenciesMeta[name]?.optional, true, `${name} is optional`);
    const dev = pkg.devDependencies[name];
    assert.ok(dev !== undefined, `${name} is a devDependency too`);
    assert.equal(
      pkg.peerDependencies[name],
      `^${dev}`,
      `${name}: the range starts at the pinned version`,
    );
  }
  assert.deepEqual(missingPeers(declared), [], "installed here");
});

test("a missing peer is named, with the npm command that installs it", () => {
  assert.deepEqual(missingPeers(["@grpc/grpc-js", "kv-engine-no-such-peer"]), [
    "kv-engine-no-such-peer",
  ]);
  assert.doesNotThrow(() => requirePeers("x", SERVE_PEERS));
  assert.throws(
    () => requirePeers("kv-engine/server", ["kv-engine-no-such-peer", "pino"]),
    (err: unknown) =>
      err instanceof MissingPeersError &&
      err.missing.join() === "kv-engine-no-such-peer" &&
      /^kv-engine\/server needs kv-engine-no-such-peer, not installed .* npm install kv-engine-no-such-peer$/.test(
        err.message,
      ),
  );
  const err = new MissingPeersError("kv-engine serve", ["@grpc/grpc-js", "pino"]);
  assert.match(
    err.message,
    new RegExp(
      `npm install @grpc/grpc-js@\\${pkg.peerDependencies["@grpc/grpc-js"]} pino@\\${pkg.peerDependencies["pino"]}$`,
    ),
  );
});
