/**
 * When and how a member snapshots its state (docs/cluster.md, "Snapshots"). After the
 * apply of each Ready a snapshot is due once `snapshotEntries` entries or `snapshotBytes`
 * data bytes were applied since the last one, or wanted: a follower needs one that this
 * member has no files for (`wantFor`), or a membership change added a member (`want`).
 * Taking one: on the cycle, the state machine fixes the snapshot's content (its store's
 * checkpoint capture) and makes itself durable through the index; then, beside the cycles
 * that follow, the snapshot's files are written into the local snapshots, the Raft log
 * records it and is compacted to `catchUpEntries` behind it, older local snapshots are
 * pruned and the followers waiting for a fresh snapshot are retried (Raft sends them the
 * new one). One snapshot is written at a time; installing a received one and closing
 * wait for it (`settled`).
 */
import { isRaftError } from "../raft/errors.js";
import type { ConfState } from "../raft/types.js";
import type { PendingSnapshot } from "./local-snapshots.js";
import type { MemberParts } from "./member-parts.js";
import type { MemberId } from "./members.js";

export class SnapshotPolicy {
  private lastIndex: number;
  private lastBytes = 0;
  /** A snapshot was asked for (a follower needs one the log cannot serve). */
  private wanted = false;
  /** Followers whose snapshot must be retried once a fresh one exists. */
  private readonly awaiting = new Set<MemberId>();
  /** The snapshot being written beside the cycles, if any (one at a time). */
  private writing: Promise<void> | undefined;
  /** What writing the last snapshot threw. */
  private failure: unknown;

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

  /**
   * After apply, before advance: starts a snapshot if one is due or wanted and none is
   * being written. Throws what the last snapshot's writing threw (the member must stop).
   */
  async afterApply(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    if (this.writing !== undefined) return;
    const machine = this.p.machine;
    const applied = machine.appliedIndex;
    const due =
      applied - this.lastIndex >= this.p.o.snapshotEntries ||
      machine.appliedBytes - this.lastBytes >= this.p.o.snapshotBytes;
    const wanted = this.wanted && this.p.snapshots.get(applied) === undefined;
    if (applied > 0 && (due || wanted)) await this.take(applied, machine.appliedTerm);
    else if (this.wanted && this.p.snapshots.get(applied) !== undefined) this.retryAwaiting();
  }

  /** Resolves once no snapshot is being written (before the state is replaced or closed). */
  async settled(): Promise<void> {
    await this.writing;
  }

  /**
   * Fixes the snapshot's content on the cycle (no apply runs), then writes it, records it
   * in the Raft log and compacts the log beside the cycles that follow: the writing reads
   * and copies files for tens of milliseconds, which would hold every write meanwhile.
   */
  private async take(index: number, term: number): Promise<void> {
    const { machine } = this.p;
    const started = performance.now();
    this.wanted = false;
    // The membership as of `index`: no apply runs until the capture resolves.
    const config = this.p.node.status().config;
    const pending = await machine.captureSnapshot(index, term);
    this.lastIndex = index;
    this.lastBytes = machine.appliedBytes;
    this.writing = this.record(pending, index, term, config, started).then(
      () => {
        this.writing = undefined;
      },
      (err: unknown) => {
        this.failure = err;
        this.writing = undefined;
      },
    );
  }

  private async record(
    pending: PendingSnapshot,
    index: number,
    term: number,
    config: ConfState,
    started: number,
  ): Promise<void> {
    const { log, o } = this.p;
    const snap = await pending.finish();
    try {
      await log.createSnapshot(index, config, snap.descriptor);
    } catch (err) {
      // A log that already has a snapshot at or past this index (received from the
      // leader meanwhile) keeps it.
      if (!isRaftError(err, "SNAPSHOT_OUT_OF_DATE")) throw err;
    }
    const compactTo = index - o.catchUpEntries;
    if (compactTo >= log.firstIndex()) await log.compact(compactTo);
    await this.p.snapshots.prune(log.firstIndex() - 1);
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
