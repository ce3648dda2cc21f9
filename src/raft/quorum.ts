/**
 * Majority quorum math, pure functions over the voters of one configuration (no joint
 * consensus: membership changes one voter at a time, see membership.ts).
 */
import type { NodeId } from "./types.js";

export type VoteResult = "won" | "lost" | "pending";

/** The size of a majority of `n` voters. */
export function majority(n: number): number {
  return (n >> 1) + 1;
}

function descending(a: number, b: number): number {
  return b - a;
}

/**
 * The highest index that a majority of voters hold, given each voter's match index in
 * `matches` (reordered in place). 0 for no voters.
 */
export function quorumIndex(matches: number[]): number {
  if (matches.length === 0) return 0;
  matches.sort(descending);
  return matches[majority(matches.length) - 1]!;
}

/** The outcome of an election among `voters` given the answers so far. */
export function voteResult(
  voters: readonly NodeId[],
  votes: ReadonlyMap<NodeId, boolean>,
): VoteResult {
  if (voters.length === 0) return "won";
  let granted = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === undefined) missing++;
    else if (v) granted++;
  }
  const q = majority(voters.length);
  if (granted >= q) return "won";
  if (granted + missing >= q) return "pending";
  return "lost";
}
