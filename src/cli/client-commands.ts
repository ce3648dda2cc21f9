/**
 * `kv-engine put|get|del|scan|cas --addr HOST:PORT[,HOST:PORT...] ...`: the typed client,
 * for people at a terminal (several addresses: the members of a cluster, tried in turn as
 * KvClient does). Bytes are shown safely (see byte-format.ts); --key-hex and --value-hex read
 * arguments and print bytes as hex (keys, values; --hex both); --json prints one JSON
 * object per line. `put --value-file` takes the value from a file or stdin; `get --out`
 * writes it to a file, `get --raw` to stdout as it is. `get` of an absent key exits 1.
 * Errors are the client's (KvClientError messages: src/client/call-failure.ts).
 */
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import type { KvClient } from "../client/kv-client.js";
import {
  BYTE_FORMAT_OPTIONS,
  type ByteFormats,
  byteFormatsOf,
  EXIT_FAILURE,
  EXIT_OK,
  intOption,
  type Parsed,
  runCommand,
  stringOption,
  UsageError,
} from "./command.js";
import { CLIENT_CONNECTION_USAGE, CONNECTION_OPTIONS, kvClient } from "./connection-options.js";

export const COMMON_USAGE = `${CLIENT_CONNECTION_USAGE}
Output options:
  --key-hex                 keys are hex (two digits per byte), in arguments and output
  --value-hex               values are hex, in arguments and output
  --hex                     both --key-hex and --value-hex
  --json                    print JSON (text fields, or fieldHex when not UTF-8 or --hex)
  -h, --help                print this help

A KEY or VALUE starting with '-' goes after '--' (kv-engine put -- -k -v).
`;

/** The connection flags, the byte formats and --json: what every client command takes. */
export const COMMON_OPTIONS = {
  ...CONNECTION_OPTIONS,
  ...BYTE_FORMAT_OPTIONS,
  json: { type: "boolean" },
} as const;

type Context = ClientContext<KvClient>;

function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

function expectArgs(ctx: Context, names: string[]): string[] {
  if (ctx.args.length !== names.length) {
    throw new UsageError(`expected ${names.join(" ")}, got ${ctx.args.length} argument(s)`);
  }
  return ctx.args;
}

/** The bytes of `file`, or of stdin for "-" (read to its end). */
async function readValue(file: string): Promise<Buffer> {
  if (file !== "-") {
    try {
      return await readFile(file);
    } catch (err) {
      throw new Error(`cannot read --value-file ${file}: ${(err as Error).message}`);
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

interface Spec {
  usage: string;
  options?: Record<string, { type: "string" | "boolean" }>;
  run: (ctx: Context) => Promise<number>;
}

const SPECS: Record<string, Spec> = {
  put: {
    usage: `Usage: kv-engine put [options] KEY VALUE | KEY --value-file FILE

Stores VALUE under KEY (durably), over the kv.v1 API.

Put options:
  --value-file FILE         the value is the bytes of FILE, as they are (never hex);
                            - reads them from stdin (kv-engine put k --value-file - < F)
`,
    options: { "value-file": { type: "string" } },
    run: async (ctx) => {
      const file = stringOption(ctx.parsed, "value-file");
      if (file !== undefined && ctx.args.length === 2) {
        throw new UsageError("give VALUE or --value-file, not both");
      }
      const [k, v] = expectArgs(ctx, file === undefined ? ["KEY", "VALUE"] : ["KEY"]);
      const key = ctx.format.key.parse(k!, "KEY");
      const value =
        file === undefined ? ctx.format.value.parse(v!, "VALUE") : await readValue(file);
      await ctx.client.put(key, value);
      if (ctx.json) line(JSON.stringify({ ok: true }));
      return EXIT_OK;
    },
  },
  get: {
    usage: `Usage: kv-engine get [options] KEY

Prints the value of KEY over the kv.v1 API (bytes shown safely: see --raw for them as
they are); exits 1 when KEY is absent.

Get options:
  --serializable            let a cluster member answer from its own state, which may be
                            stale (default: linearizable)
  --out FILE                write the value's bytes, as they are, to FILE (replaced);
                            print nothing (FILE is left alone when KEY is absent)
  --raw                     write the value's bytes to stdout, as they are, with no newline
  --rev N                   the value at revision N, read through etcd's API (revisions
                            live there; kv.v1 reads the current value); --json then adds
                            createRevision, modRevision, version, lease and revision
`,
    options: {
      serializable: { type: "boolean" },
      rev: { type: "string" },
      out: { type: "string" },
      raw: { type: "boolean" },
    },
    run: async (ctx) => {
      const [k] = expectArgs(ctx, ["KEY"]);
      const out = stringOption(ctx.parsed, "out");
      const raw = ctx.parsed.values.raw === true;
      if ([out !== undefined, raw, ctx.json].filter(Boolean).length > 1) {
        throw new UsageError("give one of --out, --raw and --json");
      }
      if (out === "") throw new UsageError("--out needs a file name");
      const rev = stringOption(ctx.parsed, "rev");
      if (rev !== undefined) {
        if (out !== undefined || raw) throw new UsageError("--rev prints text or --json");
        const { etcdClient } = await import("./etcd-command.js");
        const { getAtRevision } = await import("./etcd-kv-commands.js");
        const client = etcdClient(ctx.parsed);
        try {
          const key = ctx.format.key.parse(k!, "KEY");
          return await getAtRevision({ ...ctx, client }, key, rev);
        } finally {
          client.close();
        }
      }
      const value = await ctx.client.get(ctx.format.key.parse(k!, "KEY"), {
        serializable: ctx.parsed.values.serializable === true,
      });
      if (value !== undefined && out !== undefined) {
        await writeFileBytes(out, value);
      } else if (value !== undefined && raw) {
        await writeStdout(value);
      } else if (ctx.json) {
        const out: Record<string, unknown> = { found: value !== undefined };
        if (value !== undefined) ctx.format.value.json(out, "value", value);
        line(JSON.stringify(out));
      } else if (value !== undefined) {
        line(ctx.format.value.show(value));
      } else {
        process.stderr.write("kv-engine get: not found\n");
      }
      return value === undefined ? EXIT_FAILURE : EXIT_OK;
    },
  },
  del: {
    usage:
      "Usage: kv-engine del [options] KEY\n\nDeletes KEY over the kv.v1 API (no error when absent).\n",
    run: async (ctx) => {
      const [k] = expectArgs(ctx, ["KEY"]);
      await ctx.client.delete(ctx.format.key.parse(k!, "KEY"));
      if (ctx.json) line(JSON.stringify({ ok: true }));
      return EXIT_OK;
    },
  },
  scan: {
    usage: `Usage: kv-engine scan [options]

Prints the rows with START <= key < END (kv.v1 API), in key order, one per line: KEY<TAB>VALUE
(or one JSON object per line with --json).

Scan options:
  --start KEY               first key (default: the first key)
  --end KEY                 end key, exclusive (default: past the last key)
  --limit N                 at most N rows (default 0: no limit)
  --serializable            let a cluster member answer from its own state (may be stale)
`,
    options: {
      start: { type: "string" },
      end: { type: "string" },
      limit: { type: "string" },
      serializable: { type: "boolean" },
    },
    run: async (ctx) => {
      expectArgs(ctx, []);
      const start = stringOption(ctx.parsed, "start");
      const end = stringOption(ctx.parsed, "end");
      const limit = intOption(ctx.parsed, "limit", 0, Number.MAX_SAFE_INTEGER) ?? 0;
      for await (const batch of ctx.client.scanBatches(
        start === undefined ? undefined : ctx.format.key.parse(start, "--start"),
        end === undefined ? undefined : ctx.format.key.parse(end, "--end"),
        limit,
        { serializable: ctx.parsed.values.serializable === true },
      )) {
        let text = "";
        for (const [key, value] of batch) {
          if (ctx.json) {
            const out: Record<string, unknown> = {};
            ctx.format.key.json(out, "key", key);
            ctx.format.value.json(out, "value", value);
            text += `${JSON.stringify(out)}\n`;
          } else {
            text += `${ctx.format.key.show(key)}\t${ctx.format.value.show(value)}\n`;
          }
        }
        if (!process.stdout.write(text)) {
          await new Promise((resolve) => process.stdout.once("drain", resolve));
        }
      }
      return EXIT_OK;
    },
  },
  cas: {
    usage: `Usage: kv-engine cas [options] KEY (--expect VALUE | --expect-absent) (--value VALUE | --delete)

Compare-and-swap (kv.v1 API): iff KEY holds VALUE (or is absent), sets it to the new value (or
deletes it), atomically. Prints "applied" or "not applied", then the key's value now
(or "(absent)"); exits 0 when applied, 1 when not (docs/cluster.md says what it is safe
for). Never retried once sent.

Cas options:
  --expect VALUE            the value KEY must hold
  --expect-absent           KEY must be absent
  --value VALUE             the new value
  --delete                  delete KEY instead
`,
    options: {
      expect: { type: "string" },
      "expect-absent": { type: "boolean" },
      value: { type: "string" },
      delete: { type: "boolean" },
    },
    run: async (ctx) => {
      const [k] = expectArgs(ctx, ["KEY"]);
      const v = ctx.parsed.values;
      const expect = stringOption(ctx.parsed, "expect");
      const value = stringOption(ctx.parsed, "value");
      if ((expect === undefined) === (v["expect-absent"] !== true)) {
        throw new UsageError("give exactly one of --expect VALUE and --expect-absent");
      }
      if ((value === undefined) === (v.delete !== true)) {
        throw new UsageError("give exactly one of --value VALUE and --delete");
      }
      const r = await ctx.client.compareAndSwap(
        ctx.format.key.parse(k!, "KEY"),
        expect === undefined ? undefined : ctx.format.value.parse(expect, "--expect"),
        value === undefined ? undefined : ctx.format.value.parse(value, "--value"),
      );
      if (ctx.json) {
        const out: Record<string, unknown> = { applied: r.applied, found: r.current !== undefined };
        if (r.current !== undefined) ctx.format.value.json(out, "value", r.current);
        line(JSON.stringify(out));
      } else {
        line(r.applied ? "applied" : "not applied");
        line(r.current === undefined ? "(absent)" : ctx.format.value.show(r.current));
      }
      return r.applied ? EXIT_OK : EXIT_FAILURE;
    },
  },
};

/** Writes `bytes` to `path` (created or replaced); rejects with the file's error. */
async function writeFileBytes(path: string, bytes: Uint8Array): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const file = createWriteStream(path);
    file.once("error", (err) => reject(new Error(`cannot write --out ${path}: ${err.message}`)));
    file.end(bytes, () => resolve());
  });
}

/** Writes `bytes` to stdout and waits until they are handed over. */
function writeStdout(bytes: Uint8Array): Promise<void> {
  return new Promise((resolve) => process.stdout.write(bytes, () => resolve()));
}

/** What a command that calls a server gets: its client, byte formats, --json, arguments. */
export interface ClientContext<C> {
  client: C;
  format: ByteFormats;
  json: boolean;
  args: string[];
  parsed: Parsed;
}

/**
 * Runs command `name` with COMMON_OPTIONS plus `options`: makes its client with `make`
 * (closed when `body` ends), maps errors to exit codes (command.ts). Shared by the kv.v1
 * commands and those over etcd's API (etcd-command.ts).
 */
export function runClientCommand<C extends { close(): void }>(
  name: string,
  usage: string,
  argv: string[],
  options: Record<string, { type: "string" | "boolean"; multiple?: boolean }>,
  make: (p: Parsed) => C,
  body: (ctx: ClientContext<C>) => Promise<number>,
): Promise<number> {
  return runCommand(name, usage, argv, { ...COMMON_OPTIONS, ...options }, async (parsed) => {
    const client = make(parsed);
    try {
      return await body({
        client,
        format: byteFormatsOf(parsed),
        json: parsed.values.json === true,
        args: parsed.positionals,
        parsed,
      });
    } finally {
      client.close();
    }
  });
}

/** Runs client subcommand `name` ("put", "get", "del", "scan" or "cas"). */
export function clientCommand(name: string, argv: string[]): Promise<number> {
  const spec = SPECS[name];
  if (spec === undefined) throw new Error(`not a client command: ${name}`);
  const usage = `${spec.usage}\n${COMMON_USAGE}`;
  return runClientCommand(name, usage, argv, spec.options ?? {}, kvClient, spec.run);
}
