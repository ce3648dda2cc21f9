/**
 * The parts of a cluster member that its concerns share: lifecycle.ts, member-ops.ts,
 * peer-endpoint.ts, snapshot-policy.ts and snapshot-install.ts each take them, and
 * replicated-store.ts builds them and wires the Raft node's driver to those concerns.
 * They reach the applied state only through the state machine seam (state-machine.ts).
 */
import type { RawNode } from "../raft/raw-node.js";
import type { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import type { ClusterCounters } from "./cluster-stats.js";
import type { ReplicationEvent } from "./events.js";
import type { LocalSnapshots } from "./local-snapshots.js";
import type { MemberId } from "./members.js";
import type { NodeDir } from "./node-dir.js";
import type { NodeDriver } from "./node-driver.js";
import type { ResolvedReplicatedOptions } from "./options.js";
import type { PeerTransport } from "./peer-transport.js";
import type { Proposals } from "./proposals.js";
import type { ReadLoop } from "./read-loop.js";
import type { StateMachine } from "./state-machine.js";

export interface MemberParts {
  readonly o: ResolvedReplicatedOptions;
  readonly clusterId: number;
  readonly memberId: MemberId;
  readonly name: string;
  readonly dir: NodeDir;
  readonly log: RaftLogStorage;
  readonly node: RawNode;
  readonly driver: NodeDriver;
  readonly machine: StateMachine;
  readonly proposals: Proposals;
  readonly reads: ReadLoop;
  /** The snapshots taken here (D/snap), which peers are sent. */
  readonly snapshots: LocalSnapshots;
  readonly transport: PeerTransport;
  readonly counters: ClusterCounters;
  /** Reports an event to `o.onEvent` (events.ts). */
  emit(event: ReplicationEvent): void;
}
