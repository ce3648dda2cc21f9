/**
 * Cluster membership as the replicated store keeps it: every member's ID, name, peer and
 * client addresses and whether it is a learner, plus the IDs of removed members (their
 * messages are refused, and an ID is never reused). Stored under MEMBERS_KEY in every
 * applied batch that changes it, so that it is exactly as of the applied index, and
 * carried in snapshots with the store. Encoding: JSON (docs/format/replicated-store.md).
 */

import { KvError } from "../errors.js";
import type { ConfState } from "../raft/types.js";

/** A member's ID: a positive safe integer (see identity.ts). */
export type MemberId = number;

export interface MemberInfo {
  readonly id: MemberId;
  readonly name: string;
  /** Where peers reach it (`host:port`). */
  readonly peerAddress: string;
  /** Where clients reach it (`host:port`); "" until the member has published it. */
  readonly clientAddress: string;
  /** True while it only replicates (does not vote). */
  readonly learner: boolean;
  /**
   * A learner the leader does not promote by itself: it waits for promoteMember (etcd's
   * MemberAdd with is_learner). Absent (not false) otherwise, also in the stored JSON.
   */
  readonly awaitsPromote?: true;
}

export interface Membership {
  /** Sorted by ID. */
  readonly members: readonly MemberInfo[];
  /** IDs of removed members, sorted. */
  readonly removed: readonly MemberId[];
}

export const EMPTY_MEMBERSHIP: Membership = { members: [], removed: [] };

const FORMAT = 1;

/** The Raft configuration a membership describes. */
export function confStateOf(m: Membership): ConfState {
  const voters: MemberId[] = [];
  const learners: MemberId[] = [];
  for (const x of m.members) (x.learner ? learners : voters).push(x.id);
  return { voters, learners };
}

export function memberOf(m: Membership, id: MemberId): MemberInfo | undefined {
  return m.members.find((x) => x.id === id);
}

export function isRemoved(m: Membership, id: MemberId): boolean {
  return m.removed.includes(id);
}

/** The members other than `self` with a peer address: whom `self` sends to. */
export function peersOf(
  m: Membership,
  self: MemberId,
): Array<{ id: MemberId; peerAddress: string }> {
  return m.members
    .filter((x) => x.id !== self && x.peerAddress !== "")
    .map((x) => ({ id: x.id, peerAddress: x.peerAddress }));
}

/** `m` with `info` added or replaced (by ID). */
export function withMember(m: Membership, info: MemberInfo): Membership {
  const members = m.members.filter((x) => x.id !== info.id);
  members.push(info);
  members.sort((a, b) => a.id - b.id);
  return { members, removed: m.removed };
}

/** `m` without member `id`, which joins the removed IDs. */
export function withoutMember(m: Membership, id: MemberId): Membership {
  const removed = m.removed.includes(id) ? [...m.removed] : [...m.removed, id];
  removed.sort((a, b) => a - b);
  return { members: m.members.filter((x) => x.id !== id), removed };
}

export function encodeMembership(m: Membership): Uint8Array {
  return Buffer.from(JSON.stringify({ format: FORMAT, members: m.members, removed: m.removed }));
}

/** Decodes a stored membership; throws KvError CORRUPTION when it does not check out. */
export function decodeMembership(bytes: Uint8Array): Membership {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (err) {
    throw new KvError("CORRUPTION", "stored membership is not JSON", { cause: err });
  }
  const o = raw as { format?: unknown; members?: unknown; removed?: unknown };
  if (typeof o !== "object" || o === null || o.format !== FORMAT) {
    throw new KvError("CORRUPTION", "stored membership has an unknown format");
  }
  if (!Array.isArray(o.members) || !Array.isArray(o.removed)) {
    throw new KvError("CORRUPTION", "stored membership lacks members or removed");
  }
  const members = o.members.map((x: unknown) => decodeMemberInfo(x));
  const removed = o.removed.map((x: unknown) => {
    if (!isMemberId(x)) throw new KvError("CORRUPTION", "stored membership: bad removed ID");
    return x;
  });
  return { members, removed };
}

/** A MemberInfo from parsed JSON; throws CORRUPTION when a field is missing or wrong. */
export function decodeMemberInfo(x: unknown): MemberInfo {
  const o = x as Partial<Record<keyof MemberInfo, unknown>>;
  if (
    typeof o !== "object" ||
    o === null ||
    !isMemberId(o.id) ||
    typeof o.name !== "string" ||
    typeof o.peerAddress !== "string" ||
    typeof o.clientAddress !== "string" ||
    typeof o.learner !== "boolean" ||
    (o.awaitsPromote !== undefined && o.awaitsPromote !== true)
  ) {
    throw new KvError("CORRUPTION", `malformed member record ${JSON.stringify(x)}`);
  }
  return {
    id: o.id,
    name: o.name,
    peerAddress: o.peerAddress,
    clientAddress: o.clientAddress,
    learner: o.learner,
    ...(o.awaitsPromote === true ? { awaitsPromote: true as const } : {}),
  };
}

export function isMemberId(x: unknown): x is MemberId {
  return typeof x === "number" && Number.isSafeInteger(x) && x > 0;
}

/** A member ID as etcd prints them: lowercase hex. */
export function formatMemberId(id: MemberId): string {
  return id.toString(16);
}
