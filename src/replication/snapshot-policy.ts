/**
 * When and how a member snapshots its state (docs/cluster.md, "Snapshots"). After the
 * apply of each Ready a snapshot is due once `snapshotEntries` entries or `snapshotBytes`
 * data bytes were applied since the last one, or wanted: a follower needs one that this
 * member has no files for (`wantFor`), or a membership change added a member (`want`).
 * Taking one: the state machine checkpoints its state into the local snapshots and makes
 * itself durable through the index; the Raft log records the snapshot and is compacted to
 * `catchUpEntries` behind it; older local snapshots are pruned; the followers waiting for
 * a fresh snapshot are retried (Raft sends them the new one).
 */
import { isRaftError } from "../raft/errors.js";
import type { MemberParts } from "./member-parts.js";
import type { MemberId } from "./members.js";

export class SnapshotPolicy {
  private lastIndex: number;
  private lastBytes = 0;
  /** A snapshot was asked for (a follower needs one the log cannot serve). */
  private wanted = false;
  /** Followers whose snapshot must be retried once a fresh one exists. */
  private readonly awaiting = new Set<MemberId>();

  constructor(private readonly p: MemberParts) {
    this.lastIndex = p.log.firstIndex() - 1;
  }

  /** A snapshot of the current state is wanted (taken after the next apply). */
  want(): void {
    this.wanted = true;
  }

  /** Follower `to` needs a snapshot this member has no files for: one is taken, then `to` retried. */
  wantFor(to: MemberId): void {
    this.wanted = true;
    this.awaiting.add(to);
  }

  /** A snapshot at `index` was installed: the next one is due counting from there. */
  installed(index: number): void {
    this.lastIndex = index;
  }

  /** After apply, before advance: takes a snapshot if one is due or wanted. */
  async afterApply(): Promise<void> {
    const machine = this.p.machine;
    const applied = machine.appliedIndex;
    const due =
      applied - this.lastIndex >= this.p.o.snapshotEntries ||
      machine.appliedBytes - this.lastBytes >= this.p.o.snapshotBytes;
    const wanted = this.wanted && this.p.snapshots.get(applied) === undefined;
    if (applied > 0 && (due || wanted)) await this.take(applied, machine.appliedTerm);
    else if (this.wanted && this.p.snapshots.get(applied) !== undefined) this.retryAwaiting();
  }

  private async take(index: number, term: number): Promise<void> {
    const { machine, log, o } = this.p;
    const started = performance.now();
    this.wanted = false;
    const snap = await machine.takeSnapshot(index, term);
    const config = this.p.node.status().config;
    try {
      await log.createSnapshot(index, config, snap.descriptor);
    } catch (err) {
      // A log that already has a snapshot at this index (received from the leader) keeps it.
      if (!isRaftError(err, "SNAPSHOT_OUT_OF_DATE")) throw err;
    }
    const compactTo = index - o.catchUpEntries;
    if (compactTo >= log.firstIndex()) await log.compact(compactTo);
    await this.p.snapshots.prune(log.firstIndex() - 1);
    this.lastIndex = index;
    this.lastBytes = machine.appliedBytes;
    this.p.counters.snapshotsCreated++;
    this.p.emit({
      type: "snapshot-created",
      index,
      term,
      files: snap.files.length,
      bytes: snap.bytes,
      compactedTo: log.firstIndex() - 1,
      durationMs: performance.now() - started,
    });
    this.retryAwaiting();
  }

  private retryAwaiting(): void {
    this.wanted = false;
    for (const id of this.awaiting) this.p.node.reportSnapshot(id, "failure");
    this.awaiting.clear();
  }
}
