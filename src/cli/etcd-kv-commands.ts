/**
 * `kv-engine txn` and `kv-engine compaction REV` (etcd's KV API), and `get KEY --rev N`
 * (client-commands.ts hands it here: revisions live in etcd's API).
 */
import { readFileSync } from "node:fs";
import type { TxnOpResult, TxnResult } from "../client/etcd/etcd-txn.js";
import { EXIT_FAILURE, EXIT_OK, UsageError } from "./command.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  expectArgs,
  kvJson,
  kvText,
  line,
  parseRevision,
  runEtcdCommand,
} from "./etcd-command.js";
import { addTextCompare, fillFromJson, textOp } from "./txn-spec.js";

const TXN_USAGE = `Usage: kv-engine txn [options] [--if COMPARE...] [--then OP...] [--else OP...]
       kv-engine txn [options] < TXN.json

Runs one transaction (etcd's KV API): if every COMPARE holds, the --then ops, else the
--else ops, atomically. Prints the branch that ran ("then" or "else"), then one line per
op: "get KEY<TAB>VALUE" per key read ("get (none)" when none), "put (revision N)",
"del N" (keys deleted). --json: {succeeded, branch, revision, responses: [{type, ...}]}.
Exits 0 whichever branch ran. Without --if, --then and --else, the transaction is read as
JSON from stdin.

COMPARE: TARGET(KEY) OP OPERAND, TARGET one of value, version, create, mod, lease; OP one
  of =, !=, <, >; OPERAND a number (lease: a hex ID) or, for value, a value:
    e.g. 'mod(k) = 5', 'value(k) != v1', 'version(k) > 0', 'create(k) = 0' (absent)
OP: put KEY VALUE [lease=ID] | get KEY [prefix] | del KEY [prefix]
  A word with spaces is written as a JSON string: --then 'put "a b" "c d"'.
JSON: {"if": [COMPARE...], "then": [OP...], "else": [OP...]}, each one the text above or
  an object: {"key": "k", "target": "mod", "op": "=", "operand": 5},
  {"key": "k", "target": "value", "op": "=", "value": "v"}, {"put": {"key": "k",
  "value": "v", "lease": "ID"}}, {"get": {"key": "k", "prefix": true}}, {"del": {...}};
  "keyHex"/"valueHex" for bytes that are not text.

Txn options:
  --if COMPARE              a compare (repeat: all must hold)
  --then OP                 an op of the success branch (repeat, in order)
  --else OP                 an op of the failure branch (repeat, in order)
`;

export function txnCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "txn",
    `${TXN_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    {
      if: { type: "string", multiple: true },
      // biome-ignore lint/suspicious/noThenProperty: the --then option (an options table, never awaited)
      then: { type: "string", multiple: true },
      else: { type: "string", multiple: true },
    },
    async (ctx) => {
      expectArgs(ctx.args, []);
      const list = (name: string) =>
        (ctx.parsed.values[name] as unknown as string[] | undefined) ?? [];
      const txn = ctx.client.txn();
      if (list("if").length + list("then").length + list("else").length === 0) {
        if (process.stdin.isTTY === true) {
          throw new UsageError("give --if/--then/--else, or the transaction as JSON on stdin");
        }
        fillFromJson(txn, readFileSync(0, "utf8"), ctx.format);
      } else {
        for (const c of list("if")) addTextCompare(txn, c, ctx.format);
        txn.success(...list("then").map((o) => textOp(o, ctx.format, "--then")));
        txn.failure(...list("else").map((o) => textOp(o, ctx.format, "--else")));
      }
      const r = await txn.commit();
      if (ctx.json) line(JSON.stringify(txnJson(ctx, r)));
      else for (const l of txnLines(ctx, r)) line(l);
      return EXIT_OK;
    },
  );
}

function txnJson(ctx: EtcdContext, r: TxnResult): Record<string, unknown> {
  return {
    succeeded: r.succeeded,
    branch: r.succeeded ? "then" : "else",
    revision: r.header.revision,
    responses: r.responses.map((o) => opJson(ctx, o)),
  };
}

function opJson(ctx: EtcdContext, o: TxnOpResult): Record<string, unknown> {
  switch (o.type) {
    case "get":
      return {
        type: "get",
        kvs: o.kvs.map((kv) => kvJson(ctx.format, kv)),
        count: o.count,
        more: o.more,
      };
    case "put":
      return { type: "put", revision: o.header.revision };
    case "delete":
      return { type: "del", deleted: o.deleted };
    case "txn":
      return { type: "txn", ...txnJson(ctx, o) };
  }
}

function txnLines(ctx: EtcdContext, r: TxnResult): string[] {
  const out = [r.succeeded ? "then" : "else"];
  for (const o of r.responses) {
    if (o.type === "get") {
      if (o.kvs.length === 0) out.push("get (none)");
      for (const kv of o.kvs) out.push(`get ${kvText(ctx.format, kv)}`);
    } else if (o.type === "put") {
      out.push(`put (revision ${r.header.revision})`);
    } else if (o.type === "delete") {
      out.push(`del ${o.deleted}`);
    }
  }
  return out;
}

const COMPACTION_USAGE = `Usage: kv-engine compaction [options] REV

Discards the history of etcd's API below revision REV (etcd's Compact, as etcdctl
compaction): reads and watches before REV then fail as compacted. Not the store's LSM
compaction: that is 'kv-engine compact'.

Compaction options:
  --physical                answer once the server removed the old versions
`;

export function compactionCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "compaction",
    `${COMPACTION_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { physical: { type: "boolean" } },
    async (ctx) => {
      const [rev] = expectArgs(ctx.args, ["REV"]);
      const revision = parseRevision(rev!, "REV");
      if (revision < 1) throw new UsageError("REV must be 1 or more");
      const h = await ctx.client.compact(revision, {
        physical: ctx.parsed.values.physical === true,
      });
      line(
        ctx.json
          ? JSON.stringify({ compacted: revision, revision: h.revision })
          : `compacted the history below revision ${revision}`,
      );
      return EXIT_OK;
    },
  );
}

/**
 * `get KEY --rev N` (client-commands.ts): KEY at revision N through etcd's API; prints
 * as `get` does, --json with the revisions. Exits 1 when KEY is absent at N.
 */
export async function getAtRevision(
  ctx: EtcdContext,
  key: Uint8Array,
  rev: string,
): Promise<number> {
  const revision = parseRevision(rev, "--rev");
  const r = await ctx.client.range(key, {
    revision,
    serializable: ctx.parsed.values.serializable === true,
  });
  const kv = r.kvs[0];
  if (ctx.json) {
    const at = revision === 0 ? r.header.revision : revision;
    const out = kv === undefined ? {} : kvJson(ctx.format, kv);
    line(JSON.stringify({ found: kv !== undefined, ...out, revision: at }));
  } else if (kv !== undefined) {
    line(ctx.format.value.show(kv.value));
  } else {
    process.stderr.write(`kv-engine get: not found at revision ${revision}\n`);
  }
  return kv === undefined ? EXIT_FAILURE : EXIT_OK;
}
