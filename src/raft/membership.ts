/**
 * Membership changes, one voter or learner at a time (Raft thesis 4.1; no joint
 * consensus). A change takes effect on a node when the application applies its entry
 * (`RawNode.applyConfChange`); a leader accepts a new change only once the previous one is
 * applied, so any two consecutive configurations differ by at most one voter and their
 * majorities overlap.
 */
import { RaftError } from "./errors.js";
import type { ConfChange, ConfState, NodeId } from "./types.js";

/**
 * The configuration after `cc`, with sorted lists. Changes with no effect (adding a voter
 * that votes, removing a node that is not there) return an equal configuration. Throws
 * RaftError INVALID_ARGUMENT, changing nothing, if the change would leave no voter or
 * names node 0.
 */
export function applyChange(cs: ConfState, cc: ConfChange): ConfState {
  const id = cc.nodeId;
  if (!Number.isSafeInteger(id) || id <= 0) {
    throw new RaftError("INVALID_ARGUMENT", `conf change: invalid node ID ${String(id)}`);
  }
  const voters = cs.voters.filter((v) => v !== id);
  const learners = cs.learners.filter((l) => l !== id);
  switch (cc.type) {
    case "addVoter":
      voters.push(id);
      break;
    case "addLearner":
      learners.push(id);
      break;
    case "removeNode":
      break;
    default:
      throw new RaftError("INVALID_ARGUMENT", `conf change: unknown type ${String(cc.type)}`);
  }
  if (voters.length === 0) {
    throw new RaftError(
      "INVALID_ARGUMENT",
      `conf change: ${describeConfChange(cc)} would leave no voter`,
    );
  }
  voters.sort(byId);
  learners.sort(byId);
  return { voters, learners };
}

function byId(a: NodeId, b: NodeId): number {
  return a - b;
}

/** True iff `id` votes or learns in `cs`. */
export function isMember(cs: ConfState, id: NodeId): boolean {
  return cs.voters.includes(id) || cs.learners.includes(id);
}

export function describeConfChange(cc: ConfChange): string {
  return `${cc.type} ${cc.nodeId}`;
}

export function describeConfState(cs: ConfState): string {
  const learners = cs.learners.length > 0 ? ` learners=(${cs.learners.join(" ")})` : "";
  return `voters=(${cs.voters.join(" ")})${learners}`;
}
