/**
 * `kv-engine watch KEY [--prefix] [--rev N] [--prev-kv]`: prints the changes of a key (or
 * of every key under a prefix) through etcd's Watch API, one line per event, until
 * SIGINT/SIGTERM (exit 0) or until the watch cannot go on (exit 1, one line on stderr:
 * its revision was compacted, or the server refused it). A failed stream or member is
 * left for the next address of --addr, from the last revision printed (EtcdClient's
 * watch), so no event is printed twice or lost.
 */
import { EXIT_OK, intOption, UsageError } from "./command.js";
import {
  ETCD_COMMON_USAGE,
  eventLine,
  expectArgs,
  interruption,
  parseRevision,
  runEtcdCommand,
} from "./etcd-command.js";

const USAGE = `Usage: kv-engine watch [options] KEY

Prints every change of KEY (etcd's Watch API) as it happens, one line per event:
  REVISION<TAB>PUT<TAB>KEY<TAB>VALUE   or   REVISION<TAB>DELETE<TAB>KEY
(with --prev-kv, one more column: the value before, or "(absent)"; with --json, one
JSON object per line: {revision, type, key, value, createRevision, modRevision, version,
lease[, prevKv]}). Runs until interrupted (SIGINT or SIGTERM: exit 0). Exits 1 when the
revision to watch from was compacted (say a later --rev) or the server ends the watch.

Watch options:
  --prefix                  watch every key starting with KEY ('' with --prefix: all keys)
  --rev N                   start at revision N (past changes first; default: from now)
  --prev-kv                 show each key's previous value too
  --check-after-ms N        a silent stream is checked after N ms and, if it does not
                            answer, left for the next address (default 5000)
`;

export function watchCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "watch",
    `${USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    {
      prefix: { type: "boolean" },
      rev: { type: "string" },
      "prev-kv": { type: "boolean" },
      "check-after-ms": { type: "string" },
    },
    async (ctx) => {
      const [k] = expectArgs(ctx.args, ["KEY"]);
      const prefix = ctx.parsed.values.prefix === true;
      const key = ctx.format.key.parse(k!, "KEY");
      if (key.length === 0 && !prefix)
        throw new UsageError("KEY is empty (--prefix '' watches all keys)");
      const rev = ctx.parsed.values.rev;
      const startRevision = typeof rev === "string" ? parseRevision(rev, "--rev") : 0;
      const prevKv = ctx.parsed.values["prev-kv"] === true;
      const checkAfterMs = intOption(ctx.parsed, "check-after-ms", 10, 3_600_000);
      const stop = interruption();
      try {
        const batches = ctx.client.watch(prefix ? { prefix: key } : key, {
          startRevision,
          prevKv,
          signal: stop.signal,
          ...(checkAfterMs === undefined ? {} : { checkAfterMs }),
        });
        for await (const batch of batches) {
          let text = "";
          for (const e of batch.events) text += `${eventLine(ctx.format, e, ctx.json, prevKv)}\n`;
          if (text !== "" && !process.stdout.write(text)) {
            await new Promise((resolve) => process.stdout.once("drain", resolve));
          }
        }
        return EXIT_OK;
      } catch (err) {
        throw watchError(err);
      } finally {
        stop.dispose();
      }
    },
  );
}

/** A compaction that ended the watch, said in our words. */
function watchError(err: unknown): unknown {
  const e = err as { serverCode?: unknown; compactRevision?: unknown };
  if (e.serverCode === "COMPACTED") {
    const at = typeof e.compactRevision === "number" ? e.compactRevision : undefined;
    return new Error(
      at === undefined
        ? "the revision to watch from was compacted: watch again with a later --rev"
        : `the revision to watch from was compacted (the history kept starts at revision ${at}): watch again with --rev ${at} or later`,
    );
  }
  return err;
}
