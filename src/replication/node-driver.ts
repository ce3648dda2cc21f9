/**
 * The node driver: runs a RawNode's Ready cycle in exactly the order of docs/raft.md ("The
 * Ready cycle"), one Ready at a time:
 *
 *   rd = ready(); send rd.messages; install rd.snapshot into the store (if any); persist
 *   snapshot, entries and hard state with ONE RaftLogStorage.save (one fsync when
 *   mustSync); send rd.messagesAfterPersist; apply rd.committedEntries; hand
 *   rd.readStates to the read loop (served once applied); take a snapshot if the policy
 *   says so; advance().
 *
 * One exception to that order: when every committed entry of the Ready was persisted by
 * an earlier Ready (none is among rd.entries), none is a membership change and the Ready
 * carries no snapshot, they are applied while the save is in flight (as etcd's server
 * applies a Ready's committed entries while it writes the Ready's entries to its WAL).
 * Those entries are durable here already, so the store can never hold an entry the Raft
 * log lacks; under load, a batch's answers then leave one fsync earlier and the apply's
 * CPU overlaps the next batch's fsync. messagesAfterPersist still leave only once the
 * save completed, and the Ready is advanced only once both are done.
 *
 * Between ready() and advance() the node keeps running: every event (a message, a tick,
 * a proposal, a read) pokes the driver, which then sends what `takeMessages()` returns at
 * once, so heartbeats, appends and votes never wait on the disk. Pokes are coalesced into
 * one pump per turn of the event loop (setImmediate), so the events of one turn share one
 * Ready (and one fsync) or one takeMessages.
 *
 * A leader defers telling followers a new commit index to the next append or heartbeat
 * (RaftConfig.deferCommitBroadcast); when `commitTellMs` is given and no traffic told it
 * within that many milliseconds, the driver has the core send it (RawNode.tellCommit), so
 * a lone write reaches the followers' state machines a round trip after its commit, not a
 * heartbeat.
 *
 * Ticks come from a timer every `tickMs`. A failure inside the cycle (a failed fsync, a
 * failed apply or install) stops the driver for good (docs/raft.md: never advance after a
 * failed persist; restart from what the disk holds).
 */
import type { RawNode, Ready } from "../raft/raw-node.js";
import type { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import type { Entry, Message, ReadState, Snapshot, SoftState } from "../raft/types.js";

export interface DriverHooks {
  /** Sends messages (they need nothing durable, or the Ready they came with is durable). */
  send(messages: readonly Message[]): void;
  /** The leader or role changed. */
  softState(s: SoftState): void;
  /** Installs a snapshot from the leader into the store, before the Ready is persisted. */
  installSnapshot(snapshot: Snapshot): Promise<void>;
  /** Applies committed entries; resolves when they are visible. */
  apply(entries: readonly Entry[]): Promise<void>;
  readStates(states: readonly ReadState[]): void;
  /** After apply, before advance: the snapshot policy and log compaction. */
  afterApply(): Promise<void>;
  /** The Ready was advanced: Raft counts its entries as applied. */
  advanced(): void;
  /** A tick passed. */
  tick(): void;
  /** The cycle failed: the driver has stopped. */
  failed(err: unknown): void;
}

export class NodeDriver {
  private timer: ReturnType<typeof setInterval> | undefined;
  private commitTimer: ReturnType<typeof setTimeout> | undefined;
  private pumpScheduled = false;
  private inCycle = false;
  private stopped = false;
  private cycleDone: Promise<void> = Promise.resolve();
  /** Counters for stats and tests. */
  readies = 0;
  syncs = 0;
  /** Readies whose committed entries were applied while their save was in flight. */
  earlyApplies = 0;

  constructor(
    private readonly node: RawNode,
    private readonly log: RaftLogStorage,
    private readonly hooks: DriverHooks,
    private readonly tickMs: number,
    /** Longest a follower waits to be told a commit (see above); undefined: a heartbeat. */
    private readonly commitTellMs?: number,
  ) {}

  start(): void {
    this.timer = setInterval(this.onTick, this.tickMs);
    this.timer.unref?.();
    this.poke();
  }

  /** Stops ticking and pumping; resolves once a cycle in progress ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.commitTimer !== undefined) clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    await this.cycleDone;
  }

  /** Stops ticking only (a removed member): messages still flow. */
  stopTicking(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  get running(): boolean {
    return !this.stopped;
  }

  /** There may be work: pump in this turn's check phase. */
  poke(): void {
    if (this.pumpScheduled || this.stopped) return;
    this.pumpScheduled = true;
    setImmediate(this.pump);
  }

  private readonly onTick = (): void => {
    if (this.stopped) return;
    this.node.tick();
    this.hooks.tick();
    this.poke();
  };

  private readonly pump = (): void => {
    this.pumpScheduled = false;
    if (this.stopped) return;
    if (this.inCycle) {
      const msgs = this.node.takeMessages();
      if (msgs.length > 0) this.hooks.send(msgs);
      this.armCommitTell();
      return;
    }
    if (!this.node.hasReady()) {
      this.armCommitTell();
      return;
    }
    this.inCycle = true;
    this.cycleDone = this.cycle().then(
      () => {
        this.inCycle = false;
        this.poke();
      },
      (err: unknown) => {
        this.inCycle = false;
        this.stopped = true;
        if (this.timer !== undefined) clearInterval(this.timer);
        this.hooks.failed(err);
      },
    );
  };

  /** Starts the commit timer if a follower was not told the commit index and none runs. */
  private armCommitTell(): void {
    if (this.commitTellMs === undefined || this.commitTimer !== undefined) return;
    if (!this.node.commitUntold()) return;
    this.commitTimer = setTimeout(this.onCommitTell, this.commitTellMs);
    this.commitTimer.unref?.();
  }

  private readonly onCommitTell = (): void => {
    this.commitTimer = undefined;
    if (this.stopped) return;
    this.node.tellCommit();
    this.poke();
  };

  private async cycle(): Promise<void> {
    const rd: Ready = this.node.ready();
    this.readies++;
    if (rd.softState !== undefined) this.hooks.softState(rd.softState);
    if (rd.messages.length > 0) this.hooks.send(rd.messages);
    if (rd.snapshot !== undefined) await this.hooks.installSnapshot(rd.snapshot);
    let saving: Promise<void> | undefined;
    if (rd.snapshot !== undefined || rd.entries.length > 0 || rd.hardState !== undefined) {
      if (rd.mustSync) this.syncs++;
      saving = this.log.save({
        hardState: rd.hardState,
        entries: rd.entries,
        snapshot: rd.snapshot,
        mustSync: rd.mustSync,
      });
    }
    let applying: Promise<void> | undefined;
    if (appliesDuringSave(rd)) {
      this.earlyApplies++;
      applying = this.hooks.apply(rd.committedEntries);
      // Handled here so that a failure while the save runs is no unhandled rejection; it
      // is still thrown by the await below.
      applying.catch(() => {});
    }
    try {
      await saving;
    } catch (err) {
      // One cycle at a time: the apply in flight ends before the driver reports failure.
      await applying?.catch(() => {});
      throw err;
    }
    if (this.stopped) {
      await applying;
      return;
    }
    if (rd.messagesAfterPersist.length > 0) this.hooks.send(rd.messagesAfterPersist);
    if (applying !== undefined) await applying;
    else if (rd.committedEntries.length > 0) await this.hooks.apply(rd.committedEntries);
    if (rd.readStates.length > 0) this.hooks.readStates(rd.readStates);
    await this.hooks.afterApply();
    if (this.stopped) return;
    this.node.advance();
    this.hooks.advanced();
  }
}

/**
 * True when `rd`'s committed entries may be applied while `rd` is persisted: there are
 * some, all were persisted by an earlier Ready (each precedes rd.entries, which is where
 * a Ready's new or replacing entries start), none is a membership change (its
 * applyConfChange must follow the persist, see docs/raft.md) and there is no snapshot to
 * install first.
 */
export function appliesDuringSave(rd: Ready): boolean {
  const committed = rd.committedEntries;
  const last = committed[committed.length - 1];
  if (last === undefined || rd.snapshot !== undefined) return false;
  const firstNew = rd.entries[0];
  if (firstNew !== undefined && last.index >= firstNew.index) return false;
  return committed.every((e) => e.type !== "confChange");
}
