/**
 * Checks on a healed cluster of processes: a leader every member agrees on, and every
 * member holding the same contents once a barrier write is applied everywhere.
 */
import type { KvClient } from "../../src/client/kv-client.js";
import type { ProcessCluster } from "./cluster-processes.js";
import { waitFor } from "./wait-for.js";

/** The member every member of `among` agrees leads, or undefined. */
export async function agreedLeader(
  c: ProcessCluster,
  among: readonly string[],
): Promise<string | undefined> {
  const probe = c.client(among, 2000);
  try {
    const statuses = await Promise.all(
      among.map((n) =>
        probe.status(c.member(n).clientAddress, { timeoutMs: 2000 }).catch(() => undefined),
      ),
    );
    const leaders = new Set(statuses.map((s) => s?.leaderId ?? 0));
    if (leaders.size !== 1 || leaders.has(0)) return undefined;
    const id = [...leaders][0]!.toString(16);
    const name = among.find((n) => c.member(n).memberId === id);
    return name;
  } finally {
    probe.close();
  }
}

export async function waitAgreedLeader(
  c: ProcessCluster,
  among: readonly string[],
  limitMs = 20_000,
): Promise<string> {
  let name: string | undefined;
  await waitFor(
    async () => {
      name = await agreedLeader(c, among);
      return name !== undefined;
    },
    `a leader every one of ${among.join(", ")} agrees on`,
    limitMs,
  );
  return name!;
}

/**
 * Waits until every member of `among` applied a barrier write (and the same index), then
 * scans each one serializably; resolves with the contents (key -> value) iff they are all
 * equal, and throws a legible difference otherwise.
 */
export async function assertConverged(
  c: ProcessCluster,
  among: readonly string[],
  context: string,
  limitMs = 30_000,
): Promise<Map<string, string>> {
  await waitAgreedLeader(c, among, limitMs);
  const kv = c.client(among, 3000);
  try {
    await waitFor(
      () =>
        kv.put("__barrier", String(Date.now())).then(
          () => true,
          () => false,
        ),
      `${context}: a barrier write`,
      limitMs,
    );
    const until = Date.now() + limitMs;
    for (;;) {
      const before = await appliedIndexes(c, kv, among);
      if (new Set(before).size === 1) {
        const contents = await Promise.all(among.map((n) => scanOf(c, n)));
        const afterIdx = await appliedIndexes(c, kv, among);
        if (afterIdx.every((x, i) => x === before[i])) {
          for (let i = 1; i < among.length; i++) {
            const d = diff(contents[0]!, contents[i]!);
            if (d !== "") {
              throw new Error(
                `${context}: members ${among[0]} and ${among[i]} differ at applied index ${before[0]}:\n${d}`,
              );
            }
          }
          return contents[0]!;
        }
      }
      if (Date.now() > until) {
        throw new Error(`${context}: applied indexes never became equal: ${before.join(", ")}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    kv.close();
  }
}

async function appliedIndexes(
  c: ProcessCluster,
  kv: KvClient,
  among: readonly string[],
): Promise<number[]> {
  return Promise.all(
    among.map((n) =>
      kv.status(c.member(n).clientAddress, { timeoutMs: 2000 }).then(
        (s) => s.appliedIndex,
        () => -1,
      ),
    ),
  );
}

/** Member `n`'s user data by a serializable scan of its own state. */
async function scanOf(c: ProcessCluster, n: string): Promise<Map<string, string>> {
  const one = c.client([n], 10_000);
  try {
    const rows = await one.scanAll(undefined, undefined, 0, { serializable: true });
    return new Map(rows.map(([k, v]) => [k.toString("utf8"), v.toString("utf8")]));
  } finally {
    one.close();
  }
}

function diff(a: Map<string, string>, b: Map<string, string>): string {
  const lines: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) lines.push(`  ${k}: ${v} vs ${b.get(k) ?? "absent"}`);
  for (const [k, v] of b) if (!a.has(k)) lines.push(`  ${k}: absent vs ${v}`);
  return lines.slice(0, 20).join("\n");
}
