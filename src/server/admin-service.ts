/**
 * kv.v1.AdminService (proto/kv/v1/admin.proto) over an AdminBackend: checkpoints into the
 * server's backup directory, compactRange with progress, flush, stats. Transport-neutral
 * operations; lean-transport.ts and grpc-js-transport.ts bind them.
 *
 * Checkpoint: the request names a directory under `backupDir` (confined-path.ts decides
 * what is refused: "..", absolute paths outside, symbolic links, existing names); without
 * a backup directory the call is FAILED_PRECONDITION. CompactRange: the stream sends the
 * sizes before, one message per compaction that finishes meanwhile, and a final one; a
 * client that goes away does not stop the compaction (it cannot be cut short), it only
 * stops the messages.
 */
import { status } from "@grpc/grpc-js";
import type { AdminBackend, CompactionEvent } from "../db/admin-backend.js";
import type { StoreStats } from "../db/kv-backend.js";
import type {
  CheckpointRequest,
  CheckpointResponse,
  CompactRangeProgress,
  CompactRangeRequest,
  FlushResponse,
  LevelSizes,
  StatsResponse,
} from "../proto/gen/kv/v1/admin_pb.js";
import { confinedNewPath } from "../vfs/confined-path.js";
import type { ServerLimits } from "./limits.js";
import { checkKey } from "./request-checks.js";
import { RpcFailure } from "./rpc-status.js";

/** Where the admin service may write checkpoints. */
export interface AdminServiceOptions {
  /** Checkpoints go into directories under this one; undefined: Checkpoint is refused. */
  backupDir?: string | undefined;
}

function levelSizes(s: StoreStats): LevelSizes {
  return {
    $typeName: "kv.v1.LevelSizes",
    files: s.levelFiles.map(BigInt),
    bytes: s.levelBytes.map(BigInt),
  };
}

/** The deepest level holding files, at least 1: where compactRange compacts down to. */
function targetLevel(files: readonly number[]): number {
  let deepest = 1;
  for (let l = 2; l < files.length; l++) if ((files[l] ?? 0) > 0) deepest = l;
  return Math.min(deepest, Math.max(files.length - 1, 0));
}

function progress(fields: Partial<Omit<CompactRangeProgress, "$typeName">>): CompactRangeProgress {
  return {
    $typeName: "kv.v1.CompactRangeProgress",
    targetLevel: 0,
    step: 0,
    level: 0,
    outputLevel: 0,
    trivialMove: false,
    manual: false,
    bytesRead: 0n,
    bytesWritten: 0n,
    inputFiles: 0,
    outputFiles: 0,
    done: false,
    ...fields,
  };
}

/** See the module comment. CompactRange's `send` writes one message of its stream. */
export function adminOperations(
  admin: AdminBackend,
  options: AdminServiceOptions,
  limits: ServerLimits,
) {
  return {
    async Checkpoint({ dir }: CheckpointRequest): Promise<CheckpointResponse> {
      const root = options.backupDir;
      if (root === undefined) {
        throw new RpcFailure(
          status.FAILED_PRECONDITION,
          "the server has no backup directory: start it with --backup-dir DIR",
        );
      }
      const target = await confinedNewPath(root, dir);
      if (!target.ok) {
        throw new RpcFailure(
          target.exists ? status.ALREADY_EXISTS : status.INVALID_ARGUMENT,
          `checkpoint refused: ${target.reason}`,
        );
      }
      const r = await admin.checkpoint(target.path);
      return {
        $typeName: "kv.v1.CheckpointResponse",
        path: target.path,
        linked: BigInt(r.linked),
        copied: BigInt(r.copied),
        bytes: BigInt(r.bytes),
      };
    },

    async CompactRange(
      { startKey, endKey }: CompactRangeRequest,
      send: (message: CompactRangeProgress) => void,
    ): Promise<void> {
      if (startKey !== undefined) checkKey(startKey, limits, "start_key");
      if (endKey !== undefined) checkKey(endKey, limits, "end_key");
      await admin.flush();
      const before = admin.stats();
      send(progress({ targetLevel: targetLevel(before.levelFiles), before: levelSizes(before) }));
      // Events arrive inside the store's call stack: the sizes are read on a later turn.
      const queued: CompactionEvent[] = [];
      let step = 0;
      const drain = (): void => {
        if (queued.length === 0) return;
        const levels = levelSizes(admin.stats());
        for (const e of queued.splice(0)) {
          send(
            progress({
              step: ++step,
              level: e.level,
              outputLevel: e.outputLevel,
              trivialMove: e.trivialMove,
              manual: e.manual,
              inputFiles: e.inputFiles,
              outputFiles: e.outputFiles,
              bytesRead: BigInt(e.bytesRead),
              bytesWritten: BigInt(e.bytesWritten),
              levels,
            }),
          );
        }
      };
      await admin.compactRange(startKey, endKey, {
        onCompaction: (event) => {
          if (queued.push(event) === 1) setImmediate(drain);
        },
      });
      drain();
      send(progress({ done: true, step, after: levelSizes(admin.stats()) }));
    },

    async Flush(): Promise<FlushResponse> {
      await admin.flush();
      return { $typeName: "kv.v1.FlushResponse" };
    },

    Stats(): StatsResponse {
      return { $typeName: "kv.v1.StatsResponse", json: JSON.stringify(admin.stats()) };
    },
  };
}
