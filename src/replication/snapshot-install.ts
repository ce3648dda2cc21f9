/**
 * Installing a snapshot Raft hands out in a Ready (before the Ready is persisted): the
 * files received from the leader (peer-endpoint.ts) replace the state machine's state
 * (StateMachine.install), then the member counts and reports it, takes the snapshot's
 * membership as its peers, and serves the reads waiting for its index.
 */
import type { Snapshot } from "../raft/types.js";
import type { IncomingSnapshot } from "./incoming-snapshot.js";
import type { MemberParts } from "./member-parts.js";
import { type MemberId, peersOf } from "./members.js";
import type { SnapshotPolicy } from "./snapshot-policy.js";

/** A snapshot received from a peer, complete, waiting for Raft to hand it out. */
export interface ReceivedFromPeer {
  readonly sink: IncomingSnapshot;
  readonly from: MemberId;
  /** performance.now() when its stream began. */
  readonly started: number;
}

/** Where received snapshots wait (peer-endpoint.ts). */
export interface ReceivedSnapshots {
  /** Takes the received snapshot `term`/`index`; throws if there is none. */
  take(index: number, term: number): ReceivedFromPeer;
}

export async function installSnapshot(
  p: MemberParts,
  received: ReceivedSnapshots,
  policy: SnapshotPolicy,
  snapshot: Snapshot,
): Promise<void> {
  const { index, term } = snapshot.metadata;
  const inc = received.take(index, term);
  // The state is replaced: a local snapshot still being written from it ends first.
  await policy.settled();
  const state = await p.machine.install(inc.sink);
  policy.installed(index);
  p.counters.snapshotsInstalled++;
  p.emit({
    type: "snapshot-installed",
    from: inc.from,
    index,
    term,
    bytes: inc.sink.received,
    durationMs: performance.now() - inc.started,
  });
  p.transport.setPeers(peersOf(state.membership, p.memberId));
  p.reads.onApplied(index);
}
