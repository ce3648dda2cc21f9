/**
 * Packaging: `npm pack` gives a package that installs into an empty project, whose every
 * export imports, whose types check from a consumer's TypeScript file, and whose `bin`
 * runs. Dependencies come from npm's cache when it has them (CI ran `npm ci` just
 * before), else from the registry.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
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
}

test("npm pack installs into an empty project: imports, types and bin work", async (t) => {
  const tmp = tempDir();
  t.after(tmp.remove);
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as PackageJson;

  const { stdout: packed } = await run(NPM, ["pack", "--silent", "--pack-destination", tmp.path], {
    cwd: ROOT,
  });
  const tarball = join(tmp.path, packed.trim().split("\n").at(-1)!);

  const app = join(tmp.path, "app");
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }),
  );
  await run(
    NPM,
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball],
    { cwd: app, maxBuffer: 16 << 20 },
  );

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
