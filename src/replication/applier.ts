/**
 * The apply path (docs/cluster.md, "Apply"): each run of consecutive plain entries (writes
 * and empty entries) of one `apply` call, up to MAX_RUN_BYTES, becomes ONE WriteBatch on
 * the local store holding their user mutations in log order (keys prefixed, keys.ts) and
 * the index and term of the run's last entry under APPLIED_KEY; a compare-and-swap, a
 * publish or a membership change is a batch of its own (the membership under MEMBERS_KEY).
 * A batch is atomic, so an entry is applied iff its index is <= the stored applied index,
 * and replay after a crash skips exactly what was applied. A compare-and-swap is decided
 * when its batch's turn comes in the store's commit path (KvStore.writeDecided), against
 * the value every earlier entry left: the same decision on every member.
 *
 * Entries are submitted to the store in log order without waiting for one another (the
 * store commits them in that order); `apply` resolves when all are visible to reads. As
 * each becomes visible, `applied` advances and the proposer's waiter (if it is this
 * member's entry) gets the result. A store failure rejects `apply`: the member must stop.
 */
import { decodeBatch, WriteBatch } from "../batch/write-batch.js";
import type { CasResult } from "../db/kv-backend.js";
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { KIND_PUT } from "../key/internal-key.js";
import type { LeaseTable } from "../lease/lease-table.js";
import { casIn, putAll, sameValue } from "../mvcc/kv-writes.js";
import type { Mvcc, MvccWrite } from "../mvcc/types.js";
import { decodeConfChange } from "../raft/codec.js";
import { isRaftError } from "../raft/errors.js";
import type { Entry } from "../raft/types.js";
import { getFixed64, putFixed64 } from "../util/coding.js";
import { type ChangeContext, type Command, decodeChangeContext, decodeCommand } from "./command.js";
import { APPLIED_KEY, MEMBERS_KEY, storedKey } from "./keys.js";
import {
  encodeMembership,
  type MemberId,
  type MemberInfo,
  type Membership,
  memberOf,
  withMember,
  withoutMember,
} from "./members.js";
import { decodeMvccRequest, runMvccRequest } from "./mvcc-request.js";
import type { Settlement } from "./proposals.js";
import { type KeptResult, type SessionSink, SessionTable } from "./session-table.js";
import type { StateMachineHost } from "./state-machine.js";

/** The value under APPLIED_KEY: index and term, fixed64 each. */
export function encodeApplied(index: number, term: number): Uint8Array {
  const out = new Uint8Array(16);
  putFixed64(out, 0, index);
  putFixed64(out, 8, term);
  return out;
}

export function decodeApplied(v: Uint8Array): { index: number; term: number } {
  if (v.length !== 16)
    throw new KvError("CORRUPTION", `stored applied index has ${v.length} bytes, not 16`);
  return { index: getFixed64(v, 0), term: getFixed64(v, 8) };
}

/** What the applier needs: the store, the member's hooks, and where proposals are settled. */
export interface ApplyHost extends StateMachineHost, Settlement {
  /** The store entries are applied to. */
  store(): KvStore;
  /**
   * The multi-version store over `store()` when the store holds revisions (src/mvcc/);
   * undefined for a store of the first layout, whose user keys are stored plain.
   */
  mvcc(): Mvcc | undefined;
  /**
   * Gives the store revisions (its plain user keys become revision 1: legacy-upgrade.ts,
   * deterministic in the content, resumable after a crash) and resolves with the
   * multi-version store over it. REQUIRES: every earlier entry visible.
   */
  upgrade(): Promise<Mvcc>;
  /** The lease table beside `mvcc()` (src/lease/), iff `mvcc()` is defined. */
  leases(): LeaseTable | undefined;
  readonly selfId: MemberId;
}

/** Writes the operations `fill` adds as one batch after everything submitted before. */
type Submit = (fill: (b: WriteBatch) => void) => Promise<void>;

/** A client write of kv.v1: a batch of puts and deletes, or a compare-and-swap. */
type ClientWrite = Extract<Command, { kind: "write" | "cas" }>;

/** The applied state the applier starts from (open-member.ts's StoreState). */
interface StoreStateLike {
  readonly index: number;
  readonly term: number;
  readonly membership: Membership;
  readonly sessions?: Iterable<readonly [Uint8Array, Uint8Array]>;
}

/** A merged run stops growing at this many bytes (a store batch of its own after that). */
const MAX_RUN_BYTES = 4 << 20;

/** An answer owed to this member's proposal `request` once its entry is visible. */
interface Answer {
  readonly request: number;
  /** A write of a session: its kept result (a duplicate answers with the first one). */
  readonly kept: KeptResult | undefined;
  /** Set iff the entry was refused (nothing applied). */
  readonly error: unknown;
}

/** Consecutive plain entries (writes, empty entries) applied as one store batch. */
interface Run {
  readonly batch: WriteBatch;
  readonly entries: Entry[];
  /** This member's proposals among them, in order. */
  readonly settle: Answer[];
}

/** A session sink that collects changes for a batch made later (a decided write's). */
class Collected implements SessionSink {
  readonly ops: Array<readonly [Uint8Array, Uint8Array | undefined]> = [];
  put(key: Uint8Array, value: Uint8Array): void {
    this.ops.push([key, value]);
  }
  delete(key: Uint8Array): void {
    this.ops.push([key, undefined]);
  }
  into(b: WriteBatch): WriteBatch {
    for (const [k, v] of this.ops) {
      if (v === undefined) b.delete(k);
      else b.put(k, v);
    }
    return b;
  }
}

export class Applier {
  /** The last entry visible to reads. */
  appliedIndex: number;
  appliedTerm: number;
  /** The last entry handed to the store (>= appliedIndex). */
  private submittedIndex: number;
  /** Inside applyMvcc's hold: entries' applied indexes go to `heldApplied` (stamp). */
  private holding = false;
  private heldApplied: Uint8Array | undefined;
  /** The membership as of `submittedIndex`. */
  membership: Membership;
  /** Data bytes of entries applied (for the snapshot policy). */
  appliedBytes = 0;
  /** Client sessions as of `submittedIndex` (session-table.ts). */
  readonly sessions = new SessionTable();

  constructor(
    private readonly host: ApplyHost,
    state: StoreStateLike,
  ) {
    this.appliedIndex = state.index;
    this.appliedTerm = state.term;
    this.submittedIndex = state.index;
    this.membership = state.membership;
    this.sessions.load(state.sessions ?? []);
  }

  /** Resets the state after a snapshot install (the store was replaced). */
  reset(state: StoreStateLike): void {
    this.appliedIndex = state.index;
    this.appliedTerm = state.term;
    this.submittedIndex = state.index;
    this.membership = state.membership;
    this.sessions.load(state.sessions ?? []);
  }

  /**
   * Makes the store durable through the applied index: the applied index written once
   * more, with sync (one fdatasync of the store's log; the store runs unsynced). Called
   * before the Raft log is compacted behind a snapshot, which no longer flushes the store
   * (local-snapshots.ts): without it a power loss could take the store back behind the
   * start of the compacted log, and the entries between would be lost.
   */
  persist(): Promise<void> {
    const b = new WriteBatch();
    b.put(APPLIED_KEY, encodeApplied(this.appliedIndex, this.appliedTerm));
    return this.host.store().write(b, { sync: true });
  }

  /** Applies committed `entries` in order (see the module comment). */
  async apply(entries: readonly Entry[]): Promise<void> {
    const mvcc = this.host.mvcc();
    if (mvcc !== undefined) return this.applyMvcc(mvcc, entries);
    const store = this.host.store();
    const submit: Submit = (fill) => {
      const b = new WriteBatch();
      fill(b);
      return store.write(b);
    };
    const pending: Promise<() => void>[] = [];
    let run: Run | undefined;
    const endRun = () => {
      if (run === undefined) return;
      pending.push(this.writeRun(store, run));
      run = undefined;
    };
    for (const [i, e] of entries.entries()) {
      if (e.index <= this.submittedIndex) continue;
      const cmd = this.admit(e);
      if (cmd?.kind === "upgrade") {
        // Every member converts at this entry, on the same content: the same revisions.
        endRun();
        await this.inOrder(pending.splice(0));
        const mvcc = await this.host.upgrade();
        const applied = encodeApplied(e.index, e.term);
        await mvcc.write().end((b) => this.stamp(b, applied));
        this.visible(e);
        if (cmd.proposer === this.host.selfId) this.host.settle(cmd.request, undefined, undefined);
        return this.applyMvcc(mvcc, entries.slice(i + 1));
      }
      if (e.type !== "confChange" && (cmd === undefined || cmd.kind === "write")) {
        run ??= { batch: new WriteBatch(), entries: [], settle: [] };
        if (cmd !== undefined) {
          const b = run.batch;
          let kept: KeptResult | undefined;
          let error: unknown;
          const verdict =
            cmd.session === undefined ? undefined : this.sessions.decide(cmd.session, b);
          if (verdict === undefined || verdict.kind === "apply") {
            decodeBatch(cmd.batch, (_seq, kind, k, v) => {
              if (kind === KIND_PUT) b.put(storedKey(k), v);
              else b.delete(storedKey(k));
            });
            if (verdict !== undefined && cmd.session !== undefined) {
              kept = verdict.kept;
              this.sessions.keep(cmd.session, kept, b);
            }
          } else if (verdict.kind === "duplicate") kept = verdict.kept;
          else error = verdict.error;
          if (cmd.proposer === this.host.selfId)
            run.settle.push({ request: cmd.request, kept, error });
        }
        run.entries.push(e);
        if (run.batch.byteSize >= MAX_RUN_BYTES) endRun();
        continue;
      }
      endRun();
      pending.push(
        cmd?.kind === "cas" ? this.applyCas(e, store, cmd) : this.applyOne(e, submit, cmd),
      );
    }
    endRun();
    await this.inOrder(pending);
  }

  /**
   * The store commits the batches in order, but their promises may settle out of order (a
   * decided write's has one more step): entries become visible strictly in order.
   */
  private async inOrder(pending: readonly Promise<() => void>[]): Promise<void> {
    for (const p of pending) p.catch(() => {});
    for (const p of pending) (await p)();
  }

  /**
   * Applies `entries` to a multi-version store: each entry is one write transaction, so a
   * client write gets a revision of its own (an entry without changes keeps the revision);
   * the applied index and the session table's changes are written in its batch. An
   * entry's reads (a put's previous version, a compare) see every earlier entry. The
   * entries' batches gather into one store batch (Mvcc.hold, a new one past
   * MAX_RUN_BYTES), written once every entry is ended, as a run of plain entries is.
   */
  private async applyMvcc(mvcc: Mvcc, entries: readonly Entry[]): Promise<void> {
    const submit: Submit = (fill) => mvcc.write().end(fill);
    const pending: Promise<() => void>[] = [];
    mvcc.hold(MAX_RUN_BYTES, this.trailer);
    this.holding = true;
    try {
      for (const e of entries) {
        if (e.index <= this.submittedIndex) continue;
        const cmd = this.admit(e);
        if (cmd?.kind === "write" || cmd?.kind === "cas") {
          pending.push((await this.applyClientWrite(mvcc.write(), e, cmd)).visible);
        } else if (cmd?.kind === "request") {
          pending.push((await this.applyRequest(mvcc, e, cmd)).visible);
        } else {
          pending.push(this.applyOne(e, submit, cmd));
        }
      }
    } finally {
      mvcc.release();
      this.holding = false;
      this.heldApplied = undefined;
      for (const p of pending) p.catch(() => {});
    }
    await this.inOrder(pending);
  }

  /** A held batch's trailer: the applied index of its last entry. */
  private readonly trailer = (b: WriteBatch): void => {
    if (this.heldApplied !== undefined) b.put(APPLIED_KEY, this.heldApplied);
  };

  /** Inside applyMvcc's hold: writes what is held so far and holds anew, up to `maxBytes`. */
  private rehold(mvcc: Mvcc, maxBytes: number): void {
    mvcc.release();
    mvcc.hold(maxBytes, this.trailer);
  }

  /**
   * Records `applied` (an entry's index and term) in its batch `b`; between a multi-version
   * store's hold and release, once per store batch instead, by the hold's trailer, as the
   * last entry's whose operations the batch holds.
   */
  private stamp(b: WriteBatch, applied: Uint8Array): WriteBatch {
    if (this.holding) this.heldApplied = applied;
    else b.put(APPLIED_KEY, applied);
    return b;
  }

  /** Takes entry `e` as the next submitted one; returns its command (none: a no-op or a change). */
  private admit(e: Entry): Command | undefined {
    if (e.index !== this.submittedIndex + 1) {
      throw new Error(
        `apply: entry ${e.index} after ${this.submittedIndex}: a gap in the committed entries`,
      );
    }
    this.submittedIndex = e.index;
    this.appliedBytes += e.data.length;
    return e.type === "confChange" || e.data.length === 0 ? undefined : decodeCommand(e.data);
  }

  /**
   * A multi-version request (the etcd API's writes and compactions, mvcc-request.ts), run
   * as every member runs it. Resolves once it is submitted, to when it is visible.
   */
  private async applyRequest(
    mvcc: Mvcc,
    e: Entry,
    cmd: Extract<Command, { kind: "request" }>,
  ): Promise<{ visible: Promise<() => void> }> {
    const applied = encodeApplied(e.index, e.term);
    const req = decodeMvccRequest(cmd.body);
    const leases = this.host.leases();
    if (leases === undefined)
      throw new Error("apply: a multi-version store without its lease table");
    // A Tick may be several write transactions: held, they go to the store in one batch
    // (none split off at MAX_RUN_BYTES), so a crash cannot leave part of the entry applied.
    const whole = req.kind === "leaseTick" && this.holding;
    if (whole) this.rehold(mvcc, Number.MAX_SAFE_INTEGER);
    let run: Awaited<ReturnType<typeof runMvccRequest>>;
    try {
      run = await runMvccRequest(mvcc, leases, req, (b) => this.stamp(b, applied));
    } finally {
      if (whole) this.rehold(mvcc, MAX_RUN_BYTES);
    }
    const mine = cmd.proposer === this.host.selfId;
    return {
      visible: run.ended.then(() => () => {
        this.visible(e);
        if (mine) this.host.settle(cmd.request, run.result, run.error);
        if (req.kind === "hashCheck") this.host.onHashCheck?.(req.request);
      }),
    };
  }

  /**
   * A kv.v1 write (a batch of puts and deletes, or a compare-and-swap) as write
   * transaction `w`, with its session's record. Resolves once `w` is ended, to when it is
   * visible.
   */
  private async applyClientWrite(
    w: MvccWrite,
    e: Entry,
    cmd: ClientWrite,
  ): Promise<{ visible: Promise<() => void> }> {
    const sessionOps = new Collected();
    const call = cmd.session;
    const verdict = call === undefined ? undefined : this.sessions.decide(call, sessionOps);
    let result: CasResult | undefined;
    let error: unknown;
    if (verdict === undefined || verdict.kind === "apply") {
      result =
        cmd.kind === "write"
          ? await putAll(w, cmd.batch)
          : await casIn(w, cmd.key, cmd.expected, cmd.next);
      if (verdict !== undefined && call !== undefined) {
        verdict.kept.cas = result;
        this.sessions.keep(call, verdict.kept, sessionOps);
      }
    } else if (verdict.kind === "duplicate") result = verdict.kept.cas;
    else error = verdict.error;
    const applied = encodeApplied(e.index, e.term);
    const ended = w.end((b) => this.stamp(sessionOps.into(b), applied));
    const mine = cmd.proposer === this.host.selfId;
    return {
      visible: ended.then(() => () => {
        this.visible(e);
        if (mine) this.host.settle(cmd.request, result, error);
      }),
    };
  }

  /** Submits a run of plain entries as one batch, the applied index its last entry's. */
  private writeRun(store: KvStore, run: Run): Promise<() => void> {
    const last = run.entries[run.entries.length - 1]!;
    run.batch.put(APPLIED_KEY, encodeApplied(last.index, last.term));
    return store.write(run.batch).then(() => () => {
      for (const e of run.entries) this.visible(e);
      for (const a of run.settle) this.host.settle(a.request, a.kept?.cas, a.error);
    });
  }

  /**
   * Submits entry `e` (a no-op, a session's opening, a clock, a publish or a membership
   * change) through `submit`; resolves, once it is written, to what makes it visible.
   */
  private applyOne(e: Entry, submit: Submit, cmd: Command | undefined): Promise<() => void> {
    const applied = encodeApplied(e.index, e.term);
    if (e.type === "confChange") return this.applyChange(e, submit, applied);
    if (cmd === undefined) {
      return submit((b) => this.stamp(b, applied)).then(() => () => this.visible(e));
    }
    const mine = cmd.proposer === this.host.selfId;
    switch (cmd.kind) {
      case "write":
      case "cas":
        throw new Error(`apply: entry ${e.index} is a client write, applied elsewhere`);
      case "upgrade":
        // The store has revisions already.
        return submit((b) => this.stamp(b, applied)).then(() => () => {
          this.visible(e);
          if (mine) this.host.settle(cmd.request, undefined, undefined);
        });
      case "request":
        // Only a multi-version store serves requests; its members apply them elsewhere.
        return submit((b) => this.stamp(b, applied)).then(() => () => {
          this.visible(e);
          if (mine) {
            this.host.settle(
              cmd.request,
              undefined,
              new KvError(
                "FAILED_PRECONDITION",
                "this member's data predates revisions: the etcd API is not served",
              ),
            );
          }
        });
      case "openSession": {
        const b = new Collected();
        this.sessions.open(e.index, b);
        const opened = { id: e.index, ttlMs: this.sessions.limits.ttlMs };
        return submit((x) => this.stamp(b.into(x), applied)).then(() => () => {
          this.visible(e);
          if (mine) this.host.settle(cmd.request, opened, undefined);
        });
      }
      case "clock": {
        const b = new Collected();
        this.sessions.advance(cmd.elapsedMs, b);
        return submit((x) => this.stamp(b.into(x), applied)).then(() => () => this.visible(e));
      }
      case "publish": {
        const m = memberOf(this.membership, cmd.proposer);
        if (m !== undefined) {
          this.membership = withMember(this.membership, {
            ...m,
            name: cmd.name,
            clientAddress: cmd.clientAddress,
          });
        }
        const membership = this.membership;
        const members = encodeMembership(membership);
        return submit((b) => this.stamp(b.put(MEMBERS_KEY, members), applied)).then(() => () => {
          this.visible(e);
          this.host.onMembership(undefined, membership);
          if (mine) this.host.settle(cmd.request, undefined, undefined);
        });
      }
    }
  }

  /**
   * A compare-and-swap on a store of the first layout: decided in the store's commit path
   * (KvStore.writeDecided) against the value every earlier entry left. Resolves, once it
   * is written, to what makes it visible.
   */
  private applyCas(
    e: Entry,
    store: KvStore,
    cmd: Extract<Command, { kind: "cas" }>,
  ): Promise<() => void> {
    const applied = encodeApplied(e.index, e.term);
    const mine = cmd.proposer === this.host.selfId;
    const key = storedKey(cmd.key);
    const call = cmd.session;
    const sessionOps = new Collected();
    const verdict = call === undefined ? undefined : this.sessions.decide(call, sessionOps);
    if (verdict !== undefined && verdict.kind !== "apply") {
      // Applied before (answer with its first result) or refused: nothing but the
      // session's own record changes.
      const b = sessionOps.into(new WriteBatch()).put(APPLIED_KEY, applied);
      return store.write(b).then(() => () => {
        this.visible(e);
        if (!mine) return;
        if (verdict.kind === "duplicate")
          this.host.settle(cmd.request, verdict.kept.cas, undefined);
        else this.host.settle(cmd.request, undefined, verdict.error);
      });
    }
    let result: CasResult = { applied: false, current: undefined };
    const decided = store.writeDecided((read) => {
      const current = read(key);
      const b = sessionOps.into(new WriteBatch());
      if (sameValue(current, cmd.expected)) {
        if (cmd.next === undefined) b.delete(key);
        else b.put(key, cmd.next);
        result = {
          applied: true,
          current: cmd.next === undefined ? undefined : Buffer.from(cmd.next),
        };
      } else {
        result = { applied: false, current };
      }
      if (verdict !== undefined && call !== undefined) {
        verdict.kept.cas = result;
        this.sessions.keep(call, verdict.kept, b);
      }
      b.put(APPLIED_KEY, applied);
      return b.encode();
    });
    return decided.then(() => () => {
      this.visible(e);
      if (mine) this.host.settle(cmd.request, result, undefined);
    });
  }

  private applyChange(e: Entry, submit: Submit, applied: Uint8Array): Promise<() => void> {
    if (this.membership.members.length === 0) {
      // A joining member gets its first state, configuration included, from a snapshot; a
      // change applied to no configuration would make a configuration of its own.
      throw new Error(
        `membership change at ${e.index} applied before any configuration (no snapshot installed)`,
      );
    }
    const cc = decodeConfChange(e.data);
    let ctx: ChangeContext;
    try {
      ctx = decodeChangeContext(cc.context);
    } catch {
      ctx = { proposer: 0, request: 0, member: undefined };
    }
    let ok = true;
    try {
      this.host.applyConfChange(cc);
    } catch (err) {
      if (!isRaftError(err, "INVALID_ARGUMENT")) throw err;
      ok = false;
    }
    const id = cc.nodeId;
    let member: MemberInfo | undefined;
    if (ok) {
      const known = memberOf(this.membership, id);
      const placeholder: MemberInfo = {
        id,
        name: "",
        peerAddress: "",
        clientAddress: "",
        learner: false,
      };
      // A change naming a known member keeps its record but takes the context's peer
      // address (a same-type change is how updateMember moves a member's peer address).
      const base =
        known === undefined
          ? (ctx.member ?? placeholder)
          : { ...known, peerAddress: ctx.member?.peerAddress ?? known.peerAddress };
      switch (cc.type) {
        case "addLearner":
          member = { ...base, id, learner: true };
          this.membership = withMember(this.membership, member);
          break;
        case "addVoter": {
          const { awaitsPromote: _, ...voter } = base;
          member = { ...voter, id, learner: false };
          this.membership = withMember(this.membership, member);
          break;
        }
        case "removeNode":
          member = known;
          this.membership = withoutMember(this.membership, id);
          break;
      }
    }
    const membership = this.membership;
    const members = encodeMembership(membership);
    return submit((b) => this.stamp(b.put(MEMBERS_KEY, members), applied)).then(() => () => {
      this.visible(e);
      this.host.onMembership(
        { index: e.index, change: cc, applied: ok, membership, member },
        membership,
      );
      if (ctx.proposer === this.host.selfId && ctx.request !== 0) {
        if (ok) this.host.settleAfterAdvance(ctx.request, member, undefined);
        else
          this.host.settleAfterAdvance(
            ctx.request,
            undefined,
            new KvError(
              "FAILED_PRECONDITION",
              `membership change ${cc.type} ${id} refused: it would leave no voter`,
            ),
          );
      }
    });
  }

  private visible(e: Entry): void {
    if (e.index !== this.appliedIndex + 1) {
      throw new Error(`apply: entry ${e.index} became visible after ${this.appliedIndex}`);
    }
    this.appliedIndex = e.index;
    this.appliedTerm = e.term;
    this.host.onApplied(e.index);
  }
}
