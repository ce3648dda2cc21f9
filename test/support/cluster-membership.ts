/**
 * Membership changes of a ProcessCluster through kv.v1's admin calls, as a test drives
 * them under load: adding a member as a learner and removing one, each retried while no
 * leader takes it and settled through the membership list after an unknown outcome, and
 * the flags a joining member starts with.
 */

import type { KvClient, MemberRecord } from "../../src/client/kv-client.js";
import { isKvClientError } from "../../src/client/kv-client-error.js";
import { TEST_TIMING } from "./cluster-processes.js";

/** The flags of a member joining with `kv-engine cluster add`'s printed flags. */
export function joinArgs(
  name: string,
  clientPort: number,
  members: readonly { name: string; peerAddress: string }[],
  extra: readonly string[],
): string[] {
  return [
    "--port",
    String(clientPort),
    "--name",
    name,
    "--initial-cluster",
    members.map((m) => `${m.name}=${m.peerAddress}`).join(","),
    "--initial-cluster-state",
    "existing",
    ...TEST_TIMING,
    ...extra,
  ];
}

/**
 * Removes member `hex`. A change a follower forwards and the leader refuses (another
 * change not applied yet) is dropped without an answer: the call ends at its deadline with
 * an unknown outcome. Removing is idempotent, so then the membership is read and the
 * removal asked again while it still lists the member.
 */
export async function removeMember(
  admin: KvClient,
  hex: string,
  note: (s: string) => void,
): Promise<void> {
  const id = Number.parseInt(hex, 16);
  const until = Date.now() + 40_000;
  for (;;) {
    try {
      await retried(() => admin.memberRemove(id));
      return;
    } catch (err) {
      // An earlier attempt applied (its answer lost with the removed leader's connection,
      // the client retrying it elsewhere): the member is gone, which is what was asked.
      if (isKvClientError(err) && /no member [0-9a-f]+ in the cluster/.test(err.message)) {
        note(`removal of ${hex}: already removed (${err.message})`);
        return;
      }
      if (!isKvClientError(err) || !err.outcomeUnknown || Date.now() > until) throw err;
      note(`removal of ${hex} ended unknown (${err.message})`);
      const list = await admin.memberList().catch(() => undefined);
      if (list !== undefined && !list.members.some((m) => m.id === id)) return;
    }
  }
}

/**
 * Adds member `name` as a learner; after an unknown outcome, the membership says whether
 * it was added (then its record is used) before the add is asked again.
 */
export async function addMember(
  admin: KvClient,
  spec: { name: string; peerAddress: string; clientAddress: string },
): Promise<{ member: MemberRecord; members: MemberRecord[] }> {
  const until = Date.now() + 40_000;
  for (;;) {
    try {
      return await retried(() => admin.memberAdd(spec));
    } catch (err) {
      if (!isKvClientError(err) || !err.outcomeUnknown || Date.now() > until) throw err;
      const list = await admin.memberList().catch(() => undefined);
      const member = list?.members.find(
        (m) => m.name === spec.name && m.peerAddress === spec.peerAddress,
      );
      if (list !== undefined && member !== undefined) return { member, members: list.members };
    }
  }
}

/** Retries a membership call refused as not proposed (no leader for a moment). */
export async function retried<T>(call: () => Promise<T>): Promise<T> {
  const until = Date.now() + 20_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (
        Date.now() > until ||
        !isKvClientError(err) ||
        !(err.notProposed || /not proposed|leader/i.test(err.details))
      )
        throw err;
      await sleep(200);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
