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

/**
 * The highest index that a majority of voters hold, given each voter's match index in
 * `matches` (sorted in place, descending: an insertion sort, groups are small). 0 for no
 * voters.
 */
export function quorumIndex(matches: number[]): number {
  const n = matches.length;
  if (n === 0) return 0;
  for (let i = 1; i < n; i++) {
    const v = matches[i]!;
    let j = i - 1;
    while (j >= 0 && matches[j]! < v) {
      matches[j + 1] = matches[j]!;
      j--;
    }
    matches[j + 1] = v;
  }
  return matches[majority(n) - 1]!;
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
