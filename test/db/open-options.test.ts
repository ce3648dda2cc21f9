/**
 * open()'s options: a name open does not know is refused (INVALID_ARGUMENT naming it, a
 * near known name suggested) before anything touches the directory; the abstract-level
 * adapter passes only the engine's own options on. And what open reports of a torn log
 * tail: its size, in the event and in the event log's line.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { pino } from "pino";
import { MemoryFileSystem, OPEN_OPTION_NAMES, type OpenOptions, open } from "../../src/index.js";
import { KvEngineLevel } from "../../src/level/index.js";
import { eventLogger } from "../../src/observability/event-log.js";
import { logFilePath } from "../../src/version/file-names.js";
import { rejectsWithCode } from "../support/errors.js";

describe("open options", () => {
  test("an unknown option is refused, naming it, and nothing is created", async () => {
    const fs = new MemoryFileSystem();
    const typo = { fs, writeBuferSize: 1 << 20 } as OpenOptions;
    await rejectsWithCode(open("/db", typo), "INVALID_ARGUMENT", {
      message: /unknown open option "writeBuferSize" \(did you mean "writeBufferSize"\?\)/,
    });
    assert.equal(await fs.exists("/db"), false);
    const stranger = { fs, flavour: "vanilla" } as OpenOptions;
    await rejectsWithCode(open("/db", stranger), "INVALID_ARGUMENT", {
      message: /^unknown open option "flavour"$/,
    });
    // Every listed name is accepted (with its default value: undefined).
    const all = Object.fromEntries(OPEN_OPTION_NAMES.map((n) => [n, undefined])) as OpenOptions;
    const db = await open("/db", { ...all, fs });
    await db.close();
  });

  test("the abstract-level adapter passes its own options to the engine without refusal", async () => {
    const fs = new MemoryFileSystem();
    const db = new KvEngineLevel<string, string>("/db", {
      fs,
      writeBufferSize: 64 * 1024,
      keyEncoding: "utf8",
      valueEncoding: "utf8",
    });
    await db.open({ passive: false, createIfMissing: true });
    await db.put("a", "1");
    assert.equal(await db.get("a"), "1");
    await db.close();
  });
});

describe("recovery report", () => {
  test("a torn tail in the default mode is logged as a torn tail of N bytes, not as skipped damage", async () => {
    const fs = new MemoryFileSystem();
    // No preallocated zeros, so that bytes appended at the file's end follow the last record.
    const db = await open("/db", { fs, walPreallocateBytes: 0 });
    await db.put("a", "1");
    const logNumber = db.stats().logNumber;
    await db.close();
    // A crash in the middle of an append: a fragment header announcing more than follows.
    const log = await fs.openWritable(logFilePath("/db", logNumber));
    log.append(Uint8Array.of(1, 2, 3, 4, 200, 0, 1, 9, 9, 9));
    await log.sync();
    await log.close();

    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(JSON.parse(l));
        done();
      },
    });
    const again = await open("/db", { fs, onEvent: eventLogger(pino({ level: "info" }, sink)) });
    assert.equal(again.recovery.tornTailBytes, 10);
    assert.equal(again.recovery.tornTails, 1);
    assert.equal(Buffer.from((await again.get("a"))!).toString(), "1");
    await again.close();
    const messages = lines.map((l) => String(l["msg"]));
    assert.ok(
      messages.includes(
        "recovery dropped a torn log tail of 10 bytes (an append a crash interrupted, never acknowledged)",
      ),
      messages.join("\n"),
    );
    assert.ok(!messages.some((m) => m.includes("skipCorrupted")), messages.join("\n"));
    const opened = lines.find((l) => l["msg"] === "store opened");
    assert.equal(opened?.["regionsDropped"], 0);
    assert.equal(opened?.["tornTailBytes"], 10);
  });
});
