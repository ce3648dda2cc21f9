/**
 * Runs every scenario script in test/raft/testdata/*.txt (see support/interaction-env.ts
 * for the commands, support/data-driven.ts for the format). KV_REWRITE=1 rewrites the
 * expected outputs from the actual ones; review the diff before committing it.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runDataDriven } from "./support/data-driven.js";
import { InteractionEnv } from "./support/interaction-env.js";

const dir = fileURLToPath(new URL("../../../test/raft/testdata/", import.meta.url));

for (const file of readdirSync(dir)
  .filter((f) => f.endsWith(".txt"))
  .sort()) {
  test(`scenario ${file}`, () => {
    const env = new InteractionEnv();
    runDataDriven(join(dir, file), (cmd) => env.run(cmd));
  });
}
