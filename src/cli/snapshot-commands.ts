/**
 * `kv-engine snapshot save FILE` (etcd's Maintenance.Snapshot streamed into a file) and
 * `snapshot restore FILE --data-dir DIR` (`kv-engine restore`, store-commands.ts).
 */
import { once } from "node:events";
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { contextOf } from "../client/call-runner.js";
import { SnapshotRequestSchema } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_OK, failureMessage, splitCommand, UsageError } from "./command.js";
import { etcdAdminMethods } from "./etcd-admin-methods.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  expectArgs,
  line,
  runEtcdCommand,
} from "./etcd-command.js";
import { formatBytes } from "./text-table.js";

const SNAPSHOT_USAGE = `Usage: kv-engine snapshot save FILE [options]
       kv-engine snapshot restore FILE --data-dir DIR [--json]

  save FILE                 stream a consistent snapshot of the store of the first --addr
                            (etcd's Maintenance.Snapshot) into FILE (written to FILE.part,
                            renamed when complete). Of kv-engine: its own format, which
                            'snapshot restore' and 'serve --initial-snapshot' read; of
                            etcd: its bbolt file, for etcdctl/etcdutl snapshot restore
  restore FILE --data-dir DIR
                            write the store of a kv-engine snapshot into DIR (kv-engine
                            restore --snapshot FILE --data-dir DIR: its help says more)
The snapshot has no deadline unless --timeout-ms gives one.

Snapshot options:
  --data-dir DIR            (restore) where the store goes (must not exist)
`;

export async function snapshotCommand(argv: string[]): Promise<number> {
  const first = splitCommand(argv);
  if (first.command === "restore") {
    const { restoreCommand } = await import("./store-commands.js");
    // FILE, the first argument that is no option's value, is restore's --snapshot.
    const file = splitCommand(first.args);
    const args =
      file.command === undefined || first.args.includes("--snapshot")
        ? first.args
        : ["--snapshot", file.command, ...file.args];
    return restoreCommand(args);
  }
  return runEtcdCommand(
    "snapshot",
    `${SNAPSHOT_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { "data-dir": { type: "string" } },
    async (ctx) => {
      const [action, ...rest] = ctx.args;
      if (action !== "save") {
        throw new UsageError(
          action === undefined
            ? "give an action: save or restore"
            : `unknown action '${action}' (save, restore)`,
        );
      }
      const [file] = expectArgs(rest, ["FILE"]);
      if (ctx.parsed.values["data-dir"] !== undefined)
        throw new UsageError("--data-dir goes with restore");
      return save(ctx, file!);
    },
  );
}

async function save(ctx: EtcdContext, file: string): Promise<number> {
  const endpoint = ctx.client.endpoints[0]!;
  const timeout =
    ctx.parsed.values["timeout-ms"] === undefined ? undefined : ctx.client.calls.timeoutMs;
  const deadline = timeout === undefined ? undefined : Date.now() + timeout;
  const context = contextOf(
    { endpoint, deadline, timeoutMs: timeout, partial: false, connectBy: undefined },
    etcdAdminMethods.Snapshot.path,
    "read",
  );
  const part = `${file}.part`;
  const out = createWriteStream(part);
  const opened = once(out, "open").catch((err: Error) => {
    throw new Error(`cannot write ${part}: ${err.message}`);
  });
  await opened;
  let bytes = 0;
  let complete = false;
  try {
    const stream = ctx.client.calls.transport.serverStream(
      endpoint,
      etcdAdminMethods.Snapshot,
      create(SnapshotRequestSchema, {}),
      deadline,
      context,
    );
    for await (const m of stream) {
      bytes += m.blob.length;
      if (!out.write(m.blob)) await once(out, "drain");
      if (m.remainingBytes === 0n) complete = true;
    }
    if (!complete) throw new Error("the snapshot stream ended before its last part");
    out.end();
    await once(out, "finish");
    renameSync(part, file);
  } catch (err) {
    out.destroy();
    rmSync(part, { force: true });
    throw new Error(`snapshot of ${endpoint} not saved: ${failureMessage(err)}`);
  }
  line(
    ctx.json
      ? JSON.stringify({ endpoint, file, bytes })
      : `snapshot of ${endpoint} saved to ${file} (${bytes} bytes, ${formatBytes(bytes)})`,
  );
  return EXIT_OK;
}
