/**
 * Membership operations of a member (docs/cluster.md, "Membership"): addMember (as a
 * learner), removeMember and transferLeadership for callers; on each tick, the leader's
 * promotion of a caught-up learner (one at a time) and this member's publication of its
 * name and client address; and what an applied membership change means here (the peers,
 * the event, this member's removal, a snapshot wanted for a new member).
 */
import { KvError } from "../errors.js";
import { isRaftError } from "../raft/errors.js";
import { encodeChangeContext, encodePublish } from "./command.js";
import { checkAddress, checkMemberName, newMemberId } from "./identity.js";
import { type MemberLife, proposeError, unavailable } from "./lifecycle.js";
import type { MemberParts } from "./member-parts.js";
import {
  formatMemberId,
  isRemoved,
  type MemberId,
  type MemberInfo,
  type Membership,
  memberOf,
  peersOf,
} from "./members.js";
import type { ReplicatedWriteOptions } from "./options.js";
import type { SnapshotPolicy } from "./snapshot-policy.js";
import type { AppliedChange } from "./state-machine.js";

/** What addMember is given. */
export interface NewMember {
  /** "" for a member named when it starts (it publishes its name; etcd's MemberAdd). */
  name: string;
  peerAddress: string;
  clientAddress?: string;
  /** Leave it a learner until promoteMember (default: promoted once caught up). */
  awaitPromote?: boolean;
}

export class MemberOps {
  private ticks = 0;
  private promoteRetryTick = 0;
  private publishRetryTick = 0;

  constructor(
    private readonly p: MemberParts,
    private readonly life: MemberLife,
    private readonly policy: SnapshotPolicy,
  ) {}

  /** ReplicatedStore.addMember: proposes adding a learner with a new ID. */
  addMember(spec: NewMember, options?: ReplicatedWriteOptions): Promise<MemberInfo> {
    try {
      const name = spec.name === "" ? "" : checkMemberName(spec.name, "name");
      const peerAddress = checkAddress(spec.peerAddress, "peerAddress");
      const clientAddress = spec.clientAddress ?? "";
      if (clientAddress !== "") checkAddress(clientAddress, "clientAddress");
      const m = this.p.machine.membership;
      const clash = m.members.find(
        (x) => (name !== "" && x.name === name) || x.peerAddress === peerAddress,
      );
      if (clash !== undefined) {
        throw new KvError(
          "FAILED_PRECONDITION",
          `member ${clash.name} (${formatMemberId(clash.id)}) already has that name or peer address`,
        );
      }
      let id = newMemberId({ name, peerAddress });
      while (memberOf(m, id) !== undefined || isRemoved(m, id))
        id = newMemberId({ name, peerAddress });
      const member: MemberInfo = {
        id,
        name,
        peerAddress,
        clientAddress,
        learner: true,
        ...(spec.awaitPromote === true ? { awaitsPromote: true as const } : {}),
      };
      return this.proposeChange("addLearner", id, member, options) as Promise<MemberInfo>;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** ReplicatedStore.removeMember. */
  removeMember(id: MemberId, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      if (memberOf(this.p.machine.membership, id) === undefined) {
        throw new KvError("FAILED_PRECONDITION", `no member ${formatMemberId(id)} in the cluster`);
      }
      return this.proposeChange("removeNode", id, undefined, options).then(() => undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * ReplicatedStore.promoteMember: proposes making learner `id` a voter. Throws
   * FAILED_PRECONDITION when `id` is not a member or not a learner (readiness is the
   * caller's to judge: the leader's progress, members()).
   */
  promoteMember(id: MemberId, options?: ReplicatedWriteOptions): Promise<MemberInfo> {
    try {
      const member = memberOf(this.p.machine.membership, id);
      if (member === undefined || !member.learner) {
        throw new KvError("FAILED_PRECONDITION", `${formatMemberId(id)} is not a learner`);
      }
      const { awaitsPromote: _, ...voter } = member;
      return this.proposeChange(
        "addVoter",
        id,
        { ...voter, learner: false },
        options,
      ) as Promise<MemberInfo>;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * ReplicatedStore.updateMember: proposes moving member `id` to `peerAddress` (a change of
   * its own kind: a voter stays a voter, a learner a learner). The member must then be
   * restarted with that address in --initial-cluster.
   */
  updateMember(
    id: MemberId,
    peerAddress: string,
    options?: ReplicatedWriteOptions,
  ): Promise<MemberInfo> {
    try {
      checkAddress(peerAddress, "peerAddress");
      const m = this.p.machine.membership;
      const member = memberOf(m, id);
      if (member === undefined) {
        throw new KvError("FAILED_PRECONDITION", `no member ${formatMemberId(id)} in the cluster`);
      }
      const clash = m.members.find((x) => x.id !== id && x.peerAddress === peerAddress);
      if (clash !== undefined) {
        throw new KvError(
          "FAILED_PRECONDITION",
          `member ${clash.name} (${formatMemberId(clash.id)}) already has peer address ${peerAddress}`,
        );
      }
      return this.proposeChange(
        member.learner ? "addLearner" : "addVoter",
        id,
        { ...member, peerAddress },
        options,
      ) as Promise<MemberInfo>;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private proposeChange(
    type: "addLearner" | "addVoter" | "removeNode",
    id: MemberId,
    member: MemberInfo | undefined,
    options: ReplicatedWriteOptions | undefined,
  ): Promise<MemberInfo | undefined> {
    const p = this.p;
    this.life.checkServing();
    if (this.life.lead === 0)
      throw unavailable("not proposed: no leader is known; safe to retry", undefined);
    const timeout = options?.timeoutMs ?? p.o.proposalTimeoutMs;
    const { request, promise } = p.proposals.register<MemberInfo | undefined>(
      timeout,
      options?.signal,
      p.node.lead,
    );
    try {
      p.node.proposeConfChange({
        type,
        nodeId: id,
        context: encodeChangeContext({ proposer: p.memberId, request, member }),
      });
    } catch (err) {
      p.proposals.cancel(request);
      throw proposeError(err, this.life.leaderHint());
    }
    p.driver.poke();
    return promise;
  }

  /** ReplicatedStore.transferLeadership: asks Raft to hand over, waits for the new leader. */
  async transferLeadership(to?: MemberId, timeoutMs?: number): Promise<void> {
    const p = this.p;
    this.life.checkServing();
    let target = to;
    if (target === undefined) {
      const progress = this.life.role === "leader" ? p.node.status().progress : undefined;
      let best = -1;
      for (const [id, pr] of progress ?? []) {
        if (id === p.memberId || pr.isLearner) continue;
        if (pr.match > best) {
          best = pr.match;
          target = id;
        }
      }
      if (target === undefined) {
        throw new KvError(
          "FAILED_PRECONDITION",
          "no other voter to hand leadership to (or this member does not lead)",
        );
      }
    }
    const m = memberOf(p.machine.membership, target);
    if (m === undefined || m.learner) {
      throw new KvError(
        "FAILED_PRECONDITION",
        `${formatMemberId(target)} is not a voter of the cluster`,
      );
    }
    if (this.life.lead === target) return;
    if (this.life.lead === 0)
      throw unavailable("no leader is known to transfer leadership from", undefined);
    p.node.transferLeader(target);
    p.driver.poke();
    const limit = timeoutMs ?? 2 * p.o.electionTicks * p.o.tickMs;
    const deadline = Date.now() + limit;
    while (this.life.lead !== target) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw unavailable(
          `leadership did not pass to ${formatMemberId(target)} within ${limit} ms`,
          this.life.leaderHint(),
        );
      }
      await this.life.leaderChange(left);
    }
  }

  /** A tick passed: the leader's promotion of a learner, this member's publication. */
  onTick(): void {
    this.ticks++;
    if (this.life.removed) return;
    if (this.life.role === "leader") this.maybePromote();
    this.maybePublish();
  }

  /** Leader: promotes one caught-up learner at a time (docs/cluster.md, "Membership"). */
  private maybePromote(): void {
    const p = this.p;
    if (this.ticks < this.promoteRetryTick) return;
    const st = p.node.status();
    for (const [id, pr] of st.progress ?? []) {
      if (!pr.isLearner || pr.state !== "replicate" || pr.match + p.o.promoteLagEntries < st.commit)
        continue;
      const member = memberOf(p.machine.membership, id);
      if (member?.awaitsPromote === true) continue;
      try {
        p.node.proposeConfChange({
          type: "addVoter",
          nodeId: id,
          context: encodeChangeContext({
            proposer: p.memberId,
            request: 0,
            member: member === undefined ? undefined : { ...member, learner: false },
          }),
        });
        p.driver.poke();
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
      this.promoteRetryTick = this.ticks + 2 * p.o.electionTicks;
      return;
    }
  }

  /** Publishes this member's name and client address once a leader is known, until applied. */
  private maybePublish(): void {
    const p = this.p;
    if (this.life.lead === 0 || this.ticks < this.publishRetryTick) return;
    const me = memberOf(p.machine.membership, p.memberId);
    if (me === undefined || (me.clientAddress === p.o.clientAddress && me.name === p.name)) return;
    try {
      p.node.propose(encodePublish(p.memberId, 0, p.name, p.o.clientAddress));
      p.driver.poke();
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
    this.publishRetryTick = this.ticks + 2 * p.o.electionTicks;
  }

  /** The state machine's onMembership hook (`change` undefined: a member published). */
  onMembership(change: AppliedChange | undefined, membership: Membership): void {
    const p = this.p;
    p.transport.setPeers(peersOf(membership, p.memberId));
    if (change === undefined) return;
    const cs = p.node.status().config;
    p.emit({
      type: "membership",
      index: change.index,
      change: change.change.type,
      member: change.change.nodeId,
      name: change.member?.name ?? "",
      applied: change.applied,
      voters: cs.voters,
      learners: cs.learners,
    });
    if (!change.applied) return;
    if (change.change.type === "removeNode" && change.change.nodeId === p.memberId) {
      this.life.onRemoved(change.index);
    }
    if (change.change.type !== "removeNode" && p.log.firstIndex() > 1) {
      // A new member needs a snapshot of a configuration that includes it.
      this.policy.want();
    }
  }
}
