/**
 * `kv-engine put|get|del|scan --addr HOST:PORT ...`: the typed client, for people at a
 * terminal. Bytes are shown safely (see byte-format.ts); --hex reads arguments and prints
 * bytes as hex; --json prints one JSON object per line. `get` of an absent key exits 1.
 */
import { KvClient, type KvClientOptions } from "../client/kv-client.js";
import { isKvClientError } from "../client/kv-client-error.js";
import { type ByteFormat, byteFormat } from "./byte-format.js";
import {
  EXIT_FAILURE,
  EXIT_OK,
  fileOption,
  intOption,
  type Parsed,
  runCommand,
  stringOption,
  tokenOption,
  UsageError,
} from "./command.js";

const DEFAULT_ADDR = "127.0.0.1:50051";
const DEFAULT_TIMEOUT_MS = 10_000;

const COMMON_USAGE = `Connection and output options:
  --addr HOST:PORT          server address (default ${DEFAULT_ADDR})
  --timeout-ms N            deadline of the call (default ${DEFAULT_TIMEOUT_MS})
  --tls                     connect with TLS, trusting the system's CAs
  --tls-ca FILE             connect with TLS, trusting this PEM CA
  --tls-cert FILE           client certificate (PEM) for mutual TLS (needs --tls-key)
  --tls-key FILE            private key (PEM) of --tls-cert
  --tls-server-name NAME    name to check the server certificate against
  --auth-token-file FILE    send "authorization: Bearer <token>" (token = file contents)
  --hex                     keys and values are hex, in arguments and output
  --json                    print JSON (text fields, or fieldHex when not UTF-8 or --hex)
  -h, --help                print this help
`;

const COMMON_OPTIONS = {
  addr: { type: "string" },
  "timeout-ms": { type: "string" },
  tls: { type: "boolean" },
  "tls-ca": { type: "string" },
  "tls-cert": { type: "string" },
  "tls-key": { type: "string" },
  "tls-server-name": { type: "string" },
  "auth-token-file": { type: "string" },
  hex: { type: "boolean" },
  json: { type: "boolean" },
} as const;

interface Context {
  client: KvClient;
  format: ByteFormat;
  json: boolean;
  args: string[];
  parsed: Parsed;
}

function clientOptions(p: Parsed): KvClientOptions {
  const out: KvClientOptions = {
    timeoutMs: intOption(p, "timeout-ms", 1, 86_400_000) ?? DEFAULT_TIMEOUT_MS,
  };
  const ca = fileOption(p, "tls-ca");
  const cert = fileOption(p, "tls-cert");
  const key = fileOption(p, "tls-key");
  const serverName = stringOption(p, "tls-server-name");
  if ((cert === undefined) !== (key === undefined)) {
    throw new UsageError("--tls-cert and --tls-key go together");
  }
  const tls = p.values.tls === true || ca !== undefined || cert !== undefined;
  if (tls) {
    out.tls = {};
    if (ca !== undefined) out.tls.ca = ca;
    if (cert !== undefined) out.tls.cert = cert;
    if (key !== undefined) out.tls.key = key;
    if (serverName !== undefined) out.tls.serverName = serverName;
  }
  const token = tokenOption(p, "auth-token-file");
  if (token !== undefined) out.authToken = token;
  return out;
}

function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

function expectArgs(ctx: Context, names: string[]): string[] {
  if (ctx.args.length !== names.length) {
    throw new UsageError(`expected ${names.join(" ")}, got ${ctx.args.length} argument(s)`);
  }
  return ctx.args;
}

interface Spec {
  usage: string;
  options?: Record<string, { type: "string" | "boolean" }>;
  run: (ctx: Context) => Promise<number>;
}

const SPECS: Record<string, Spec> = {
  put: {
    usage: "Usage: kv-engine put [options] KEY VALUE\n\nStores VALUE under KEY (durably).\n",
    run: async (ctx) => {
      const [k, v] = expectArgs(ctx, ["KEY", "VALUE"]);
      await ctx.client.put(ctx.format.parse(k!, "KEY"), ctx.format.parse(v!, "VALUE"));
      if (ctx.json) line(JSON.stringify({ ok: true }));
      return EXIT_OK;
    },
  },
  get: {
    usage:
      "Usage: kv-engine get [options] KEY\n\nPrints the value of KEY; exits 1 when KEY is absent.\n",
    run: async (ctx) => {
      const [k] = expectArgs(ctx, ["KEY"]);
      const value = await ctx.client.get(ctx.format.parse(k!, "KEY"));
      if (ctx.json) {
        const out: Record<string, unknown> = { found: value !== undefined };
        if (value !== undefined) ctx.format.json(out, "value", value);
        line(JSON.stringify(out));
      } else if (value !== undefined) {
        line(ctx.format.show(value));
      } else {
        process.stderr.write("kv-engine get: not found\n");
      }
      return value === undefined ? EXIT_FAILURE : EXIT_OK;
    },
  },
  del: {
    usage: "Usage: kv-engine del [options] KEY\n\nDeletes KEY (no error when absent).\n",
    run: async (ctx) => {
      const [k] = expectArgs(ctx, ["KEY"]);
      await ctx.client.delete(ctx.format.parse(k!, "KEY"));
      if (ctx.json) line(JSON.stringify({ ok: true }));
      return EXIT_OK;
    },
  },
  scan: {
    usage: `Usage: kv-engine scan [options]

Prints the rows with START <= key < END, in key order, one per line: KEY<TAB>VALUE
(or one JSON object per line with --json).

Scan options:
  --start KEY               first key (default: the first key)
  --end KEY                 end key, exclusive (default: past the last key)
  --limit N                 at most N rows (default 0: no limit)
`,
    options: { start: { type: "string" }, end: { type: "string" }, limit: { type: "string" } },
    run: async (ctx) => {
      expectArgs(ctx, []);
      const start = stringOption(ctx.parsed, "start");
      const end = stringOption(ctx.parsed, "end");
      const limit = intOption(ctx.parsed, "limit", 0, Number.MAX_SAFE_INTEGER) ?? 0;
      for await (const batch of ctx.client.scanBatches(
        start === undefined ? undefined : ctx.format.parse(start, "--start"),
        end === undefined ? undefined : ctx.format.parse(end, "--end"),
        limit,
      )) {
        let text = "";
        for (const [key, value] of batch) {
          if (ctx.json) {
            const out: Record<string, unknown> = {};
            ctx.format.json(out, "key", key);
            ctx.format.json(out, "value", value);
            text += `${JSON.stringify(out)}\n`;
          } else {
            text += `${ctx.format.show(key)}\t${ctx.format.show(value)}\n`;
          }
        }
        if (!process.stdout.write(text)) {
          await new Promise((resolve) => process.stdout.once("drain", resolve));
        }
      }
      return EXIT_OK;
    },
  },
};

/** Runs client subcommand `name` ("put", "get", "del" or "scan"). */
export function clientCommand(name: string, argv: string[]): Promise<number> {
  const spec = SPECS[name];
  if (spec === undefined) throw new Error(`not a client command: ${name}`);
  const usage = `${spec.usage}\n${COMMON_USAGE}`;
  return runCommand(name, usage, argv, { ...COMMON_OPTIONS, ...spec.options }, async (parsed) => {
    const client = new KvClient(
      stringOption(parsed, "addr") ?? DEFAULT_ADDR,
      clientOptions(parsed),
    );
    try {
      return await spec.run({
        client,
        format: byteFormat(parsed.values.hex === true),
        json: parsed.values.json === true,
        args: parsed.positionals,
        parsed,
      });
    } catch (err) {
      if (isKvClientError(err)) throw new Error(`${err.codeName}: ${err.details}`);
      throw err;
    } finally {
      client.close();
    }
  });
}
