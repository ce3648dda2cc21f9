/**
 * Packaging: `npm pack` gives a package holding the build, the docs without benchmark
 * results, and the LICENSE; it installs into an empty project, where without its optional
 * peers the embedded store works and the server, the client and `kv-engine serve` fail
 * with one error naming the packages to install; with them every export imports, the
 * types check from a consumer's TypeScript file, and the `bin` runs. Dependencies come
 * from npm's cache when it has them (CI ran `npm ci` just before), else from the registry.
 * With KV_STRESS=1, also `npm install git+file://...` of this repository's HEAD (a clone,
 * its devDependencies and the `prepare` build: about a minute).
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tempDir } from "../support/temp-dir.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

interface PackageJson {
  name: string;
  version: string;
  exports: Record<string, unknown>;
  bin: Record<string, string>;
  peerDependencies: Record<string, string>;
}

const INSTALL = ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];

/** An empty ESM project in `dir`. */
function emptyApp(dir: string): void {
  mkdirSync(dir);
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }),
  );
}

/** Runs `node file` in `cwd` (the file written from `source`); resolves with its output. */
async function runScript(cwd: string, file: string, source: string) {
  writeFileSync(join(cwd, file), source);
  return run(process.execPath, [file], { cwd });
}

test("npm pack installs into an empty project: imports, types and bin work", async (t) => {
  const tmp = tempDir();
  t.after(tmp.remove);
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as PackageJson;

  // --ignore-scripts: `prepare` would rebuild dist/ while other test files run from it.
  const { stdout: packed } = await run(
    NPM,
    ["pack", "--json", "--ignore-scripts", "--pack-destination", tmp.path],
    { cwd: ROOT, maxBuffer: 16 << 20 },
  );
  const [info] = JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const tarball = join(tmp.path, info!.filename);

  // What the tarball holds.
  const files = info!.files.map((f) => f.path);
  for (const f of [
    "LICENSE",
    "README.md",
    "package.json",
    "dist/src/index.js",
    "dist/src/entry/server.js",
  ]) {
    assert.ok(files.includes(f), `the tarball has ${f}`);
  }
  assert.ok(files.includes("docs/benchmarks/README.md"), "the benchmark docs' README");
  assert.deepEqual(
    files.filter((f) => f.startsWith("docs/benchmarks/") && f !== "docs/benchmarks/README.md"),
    [],
    "no benchmark results (JSON, SVG, reports)",
  );
  assert.deepEqual(
    files.filter((f) => /^(dist\/(test|bench)|test|bench|src)\//.test(f)),
    [],
    "no tests, benchmarks or sources",
  );
  assert.match(
    readFileSync(join(ROOT, "LICENSE"), "utf8"),
    /^\s*Apache License\s+Version 2\.0, January 2004/,
  );

  const app = join(tmp.path, "app");
  emptyApp(app);
  await run(NPM, [...INSTALL, tarball], { cwd: app, maxBuffer: 16 << 20 });

  // Without the optional peers: the embedded store works; the rest says what to install.
  for (const peer of Object.keys(pkg.peerDependencies)) {
    assert.throws(
      () =>
        execFileSync(process.execPath, ["-e", `require.resolve(${JSON.stringify(peer)})`], {
          cwd: app,
          stdio: "ignore",
        }),
      `${peer} is not installed with the package`,
    );
  }
  const { stdout: embedded } = await runScript(
    app,
    "embedded.mjs",
    `import { open } from "kv-engine";
import { KvEngineLevel } from "kv-engine/level";
const db = await open("./embedded");
await db.put("k", "v");
console.log(String(await db.get("k")), typeof KvEngineLevel);
await db.close();
for (const entry of ["kv-engine/server", "kv-engine/client"]) {
  try {
    await import(entry);
    console.log(entry, "imported");
  } catch (err) {
    console.log(err.name, err.message);
  }
}
`,
  );
  const lines = embedded.trim().split("\n");
  assert.equal(lines[0], "v function");
  const install = (names: string[]) =>
    `npm install ${names.map((n) => `${n}@${pkg.peerDependencies[n]}`).join(" ")}`;
  assert.match(
    lines[1]!,
    /^MissingPeersError kv-engine\/server needs @grpc\/grpc-js, @grpc\/reflection, grpc-health-check, @bufbuild\/protobuf, not installed/,
  );
  assert.ok(
    lines[1]!.endsWith(
      install(["@grpc/grpc-js", "@grpc/reflection", "grpc-health-check", "@bufbuild/protobuf"]),
    ),
    lines[1],
  );
  assert.ok(lines[2]!.endsWith(install(["@grpc/grpc-js", "@bufbuild/protobuf"])), lines[2]);
  const binPath = join(app, "node_modules/.bin", Object.keys(pkg.bin)[0]!);
  const serve = await run(binPath, ["serve", "--data-dir", "./served", "--port", "0"], {
    cwd: app,
  }).then(
    () => assert.fail("serve ran without its peers"),
    (err: { code: number; stderr: string }) => err,
  );
  assert.equal(serve.code, 1);
  assert.equal(
    serve.stderr,
    `kv-engine serve: this command needs @grpc/grpc-js, @grpc/reflection, grpc-health-check, @bufbuild/protobuf, pino, prom-client, not installed ` +
      "(optional peer dependencies of kv-engine, which the embedded store does not need); " +
      `install with: ${install(["@grpc/grpc-js", "@grpc/reflection", "grpc-health-check", "@bufbuild/protobuf", "pino", "prom-client"])}\n`,
  );
  assert.equal((await run(binPath, ["--version"], { cwd: app })).stdout.trim(), pkg.version);

  // With them, as the errors say.
  const peers = Object.entries(pkg.peerDependencies).map(([n, range]) => `${n}@${range}`);
  await run(NPM, [...INSTALL, ...peers], { cwd: app, maxBuffer: 16 << 20 });

  // Every export imports.
  const subpaths = Object.keys(pkg.exports).map((k) =>
    k === "." ? pkg.name : `${pkg.name}/${k.slice(2)}`,
  );
  writeFileSync(
    join(app, "imports.mjs"),
    subpaths
      .map(
        (s, i) => `import * as m${i} from "${s}"; console.log("${s}", Object.keys(m${i}).length);`,
      )
      .join("\n"),
  );
  const { stdout: imported } = await run(process.execPath, ["imports.mjs"], { cwd: app });
  for (const s of subpaths) assert.match(imported, new RegExp(`^${s} [1-9]`, "m"), imported);

  // The engine, the server and the client work together from the installed package.
  writeFileSync(
    join(app, "use.mjs"),
    `import { open } from "kv-engine";
import { KvServer } from "kv-engine/server";
import { KvClient } from "kv-engine/client";
const db = await open("./data");
await db.put("k", "v");
const server = await KvServer.start(db, { port: 0 });
const client = new KvClient(server.address);
console.log(String(await client.get("k")));
client.close();
await server.shutdown(0);
await db.close();
`,
  );
  const { stdout: used } = await run(process.execPath, ["use.mjs"], { cwd: app });
  assert.equal(used.trim(), "v");

  // Types: a consumer's TypeScript file checks against the shipped declarations.
  writeFileSync(
    join(app, "check.ts"),
    `import { open, type KvStore, type StoreEvent } from "kv-engine";
import { KvClient } from "kv-engine/client";
import { MemoryStorage, RawNode, type Ready } from "kv-engine/raft";
const db: KvStore = await open("./data", { onEvent: (e: StoreEvent) => void e.type });
const v: Uint8Array | undefined = await db.get("k");
const c = new KvClient("127.0.0.1:1");
const w: Promise<void> = c.put("a", "b");
void v; void w;
const storage = new MemoryStorage({ confState: { voters: [1], learners: [] } });
const node = new RawNode({ id: 1, storage });
node.campaign();
const rd: Ready = node.ready();
storage.save(rd);
node.advance();
const role: string = node.status().role;
void role;
// @ts-expect-error: put takes a key and a value
await db.put("only-a-key");
`,
  );
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ["node"],
        typeRoots: [join(ROOT, "node_modules/@types")],
      },
      files: ["check.ts"],
    }),
  );
  await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], {
    cwd: app,
  });

  // The bin.
  const bin = Object.keys(pkg.bin)[0]!;
  const { stdout: version } = await run(join(app, "node_modules/.bin", bin), ["--version"], {
    cwd: app,
  });
  assert.equal(version.trim(), pkg.version);
});

test("npm install git+file:// of the repository's HEAD builds dist/ (prepare) and works", {
  skip: process.env["KV_STRESS"] === "1" ? false : "KV_STRESS=1 runs it (about a minute)",
}, async (t) => {
  const tmp = tempDir();
  t.after(tmp.remove);
  const app = join(tmp.path, "app");
  emptyApp(app);
  await run(NPM, [...INSTALL, `git+file://${ROOT}`], { cwd: app, maxBuffer: 16 << 20 });
  const { stdout } = await runScript(
    app,
    "use.mjs",
    `import { open } from "kv-engine";
const db = await open("./data");
await db.put("k", "v");
console.log(String(await db.get("k")));
await db.close();
`,
  );
  assert.equal(stdout.trim(), "v");
  const { stdout: version } = await run(join(app, "node_modules/.bin/kv-engine"), ["--version"], {
    cwd: app,
  });
  assert.match(version, /^\d+\.\d+\.\d+\n$/);
});
