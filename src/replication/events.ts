/**
 * What a ReplicatedStore reports about its cluster life, for logs and metrics (the
 * cluster's counterpart of src/db/events.ts): passed to `ReplicatedStoreOptions.onEvent`
 * synchronously, on the event-loop thread, right after the thing happened. A listener
 * must be quick and must not call back into the store synchronously; what it throws is
 * ignored. One event per election, leader change, membership change and snapshot; none
 * per request.
 */
import type { ConfChangeType } from "../raft/types.js";
import type { MemberId } from "./members.js";

export type ReplicationEvent =
  | {
      /** This member started an election (or pre-election) for `term`. */
      readonly type: "election";
      readonly term: number;
      readonly preVote: boolean;
    }
  | {
      /** The leader this member knows of changed (0: none known). */
      readonly type: "leader";
      readonly term: number;
      readonly leader: MemberId;
      readonly previous: MemberId;
    }
  | {
      /** A membership change was applied here at `index`. */
      readonly type: "membership";
      readonly index: number;
      readonly change: ConfChangeType;
      readonly member: MemberId;
      readonly name: string;
      /** False when Raft refused it (it would have left no voter): nothing changed. */
      readonly applied: boolean;
      readonly voters: readonly MemberId[];
      readonly learners: readonly MemberId[];
    }
  | {
      /** A snapshot of the store was taken at `index`; the Raft log compacted through `compactedTo`. */
      readonly type: "snapshot-created";
      readonly index: number;
      readonly term: number;
      readonly files: number;
      readonly bytes: number;
      readonly compactedTo: number;
      readonly durationMs: number;
    }
  | {
      /** A snapshot stream to `to` ended. */
      readonly type: "snapshot-sent";
      readonly to: MemberId;
      readonly index: number;
      readonly bytes: number;
      readonly ok: boolean;
      readonly message: string | undefined;
      readonly durationMs: number;
    }
  | {
      /**
       * The leader's corruption check was applied here: its HashKV at `revision` (with
       * its compacted revision), for this member to compare with its own.
       */
      readonly type: "hash-check";
      readonly leader: MemberId;
      readonly revision: number;
      readonly hash: number;
      readonly compactRevision: number;
    }
  | {
      /** A snapshot received from `from` was installed as the store. */
      readonly type: "snapshot-installed";
      readonly from: MemberId;
      readonly index: number;
      readonly term: number;
      readonly bytes: number;
      readonly durationMs: number;
    }
  | {
      /** A peer's batch or stream was refused (another cluster, a removed or unknown member). */
      readonly type: "peer-refused";
      readonly from: MemberId;
      readonly reason: string;
    }
  | {
      /** This member applied its own removal: it serves nothing more. */
      readonly type: "removed";
      readonly index: number;
    }
  | {
      /** The member stopped after a failure it cannot continue from (a failed fsync, apply or install): restart it. */
      readonly type: "failed";
      readonly message: string;
    };

export type ReplicationEventListener = (event: ReplicationEvent) => void;

/** Calls `listener` with `event`, ignoring whatever it throws. */
export function emitReplicationEvent(
  listener: ReplicationEventListener | undefined,
  event: ReplicationEvent,
): void {
  if (listener === undefined) return;
  try {
    listener(event);
  } catch {
    // A listener must not break the store.
  }
}
