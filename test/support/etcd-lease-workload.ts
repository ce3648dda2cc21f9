/**
 * The client loops of the lease chaos test (test/cluster/etcd-lease-chaos.test.ts), each
 * over etcd's v3 API on any member (the next one after a failure), each recording what it
 * saw and the violations of its rule:
 *
 * - `keepLease`: a lease kept alive every TTL/3 with a key on it. Rule: it never expires
 *   (no keep-alive is answered TTL 0, and its key and the lease are there at the end).
 * - `abandonLeases`: now and then a lease with a key, kept alive a few times, then left.
 *   Rule: no read that starts later than its last acknowledged keep-alive (or its grant)
 *   + TTL + `boundMs` x max(1, the leader changes since then) + the time no leader was up
 *   since then sees the key (a lease whose last keep-alive went unanswered is not judged:
 *   the server may have renewed it). Only a leader counts a lease's time, and each new
 *   leader first gives keep-alives a grace: every leader change may add up to `boundMs`
 *   (an election, and the grace), so the bound is per leader change (`TermTracker`
 *   counts them and the time without a leader).
 * - `fencedLocker`: Lock on a lease of its own (kept alive), then fenced writes (a Txn:
 *   create_revision(lock key) == the key's create revision, then put the resource with
 *   "client:that revision"), then Unlock. Rule, checked over every client's applied fenced
 *   writes by `checkFencing`: in revision order their lock revisions never decrease (a
 *   holder's write never applies once a later holder has written).
 */

import { decodeLockKey, encodeLock, encodeUnlock } from "../../bench/cluster/lease-codec.js";
import {
  Compare_CompareResult,
  Compare_CompareTarget,
  LeaseKeepAliveRequestSchema,
  LeaseKeepAliveResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EtcdGrpcClient } from "./etcd-grpc-client.js";
import { EtcdMaintenanceClient } from "./etcd-maintenance-client.js";

const LEASE = "etcdserverpb.Lease";
const LOCK = "v3lockpb.Lock";
const enc = (s: string) => new TextEncoder().encode(s);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Clients of every member, used round-robin: `next()` moves to the next member. */
export class Members {
  private readonly clients: EtcdGrpcClient[];
  private at: number;

  constructor(addresses: readonly string[], first: number, callMs: number) {
    this.clients = addresses.map((a) => new EtcdGrpcClient(a, {}, callMs));
    this.at = first % addresses.length;
  }

  get current(): EtcdGrpcClient {
    return this.clients[this.at]!;
  }

  next(): void {
    this.at = (this.at + 1) % this.clients.length;
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/** What a loop shares: when to stop, the test's clock (ms), where to note things. */
export interface LoopContext {
  readonly stop: () => boolean;
  readonly now: () => number;
  readonly note: (line: string) => void;
}

async function grant(m: Members, ttl: number): Promise<{ id: bigint; at: number } | undefined> {
  try {
    const r = await m.current.leaseGrant({ TTL: BigInt(ttl) });
    return r.error === "" && r.ID !== 0n ? { id: r.ID, at: performance.now() } : undefined;
  } catch {
    m.next();
    return undefined;
  }
}

/** One keep-alive: the TTL answered (0: the lease is gone), or undefined when no answer came. */
async function keepAlive(m: Members, id: bigint): Promise<number | undefined> {
  try {
    const r = await m.current.bidiOnce(
      LEASE,
      "LeaseKeepAlive",
      LeaseKeepAliveRequestSchema,
      LeaseKeepAliveResponseSchema,
      { ID: id },
    );
    return Number(r.TTL);
  } catch {
    m.next();
    return undefined;
  }
}

/** Puts `key` on lease `id`, retrying on other members until acknowledged or `give up`. */
async function putOnLease(
  m: Members,
  key: string,
  id: bigint,
  until: number,
  ctx: LoopContext,
): Promise<boolean> {
  while (!ctx.stop() && performance.now() < until) {
    try {
      await m.current.put({ key: enc(key), value: enc("v"), lease: id });
      return true;
    } catch {
      m.next();
      await sleep(50);
    }
  }
  return false;
}

export interface KeptLease {
  readonly key: string;
  id: bigint;
  keepAlives: number;
  failedKeepAlives: number;
  readonly violations: string[];
}

/**
 * Grants a lease of `ttl` s with `key` on it and keeps it alive every TTL/3 until `stop`,
 * retrying a keep-alive on the next member at once when one goes unanswered.
 */
export async function keepLease(
  addresses: readonly string[],
  first: number,
  key: string,
  ttl: number,
  ctx: LoopContext,
  out: KeptLease,
): Promise<void> {
  const m = new Members(addresses, first, 1000);
  try {
    let granted: { id: bigint; at: number } | undefined;
    while (granted === undefined && !ctx.stop()) granted = await grant(m, ttl);
    if (granted === undefined) return;
    out.id = granted.id;
    if (!(await putOnLease(m, key, granted.id, Number.POSITIVE_INFINITY, ctx))) return;
    let last = performance.now();
    while (!ctx.stop()) {
      await sleep(Math.max(0, last + (ttl * 1000) / 3 - performance.now()));
      for (;;) {
        if (ctx.stop()) return;
        const answered = await keepAlive(m, granted.id);
        if (answered === undefined) {
          out.failedKeepAlives++;
          await sleep(50);
          continue;
        }
        if (answered <= 0) {
          out.violations.push(
            `${key}: lease ${granted.id} kept alive every ${ttl / 3} s expired (keep-alive answered TTL 0 at +${ctx.now()} ms)`,
          );
          return;
        }
        out.keepAlives++;
        last = performance.now();
        break;
      }
    }
  } finally {
    m.close();
  }
}

/**
 * The Raft terms the members report (Maintenance.Status, every `everyMs`), with when each
 * was first seen: `changes(from, to)` counts the terms first seen in (from, to] (a term
 * first seen later than it began is counted late, never missed); and the polls at which
 * no member of the highest term seen called itself leader: `leaderlessMs(from, to)` (a
 * cluster without a quorum, e.g. a member killed while another is cut off, has no leader
 * to count a lease's time, however long that lasts).
 */
export class TermTracker {
  private readonly seen: { term: number; at: number }[] = [];
  private readonly leaderless: number[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(
    addresses: readonly string[],
    private readonly everyMs = 100,
  ) {
    const clients = addresses.map((a) => new EtcdMaintenanceClient(a, {}, 500));
    this.loop = (async () => {
      try {
        while (this.running) {
          const at = performance.now();
          const status = await Promise.all(
            clients.map((c) =>
              c
                .status()
                .then((r) => ({
                  term: Number(r.raftTerm),
                  leads: r.leader !== 0n && r.leader === r.header?.memberId,
                }))
                .catch(() => ({ term: 0, leads: false })),
            ),
          );
          const top = Math.max(...status.map((x) => x.term));
          const last = this.seen[this.seen.length - 1]?.term ?? 0;
          for (let t = last + 1; t <= top; t++) this.seen.push({ term: t, at });
          if (!status.some((x) => x.leads && x.term === top)) this.leaderless.push(at);
          await sleep(everyMs);
        }
      } finally {
        for (const c of clients) c.close();
      }
    })();
  }

  /** Terms first seen in (from, to] (performance.now() times). */
  changes(from: number, to: number): number {
    return this.seen.filter((s) => s.at > from && s.at <= to).length;
  }

  /** Milliseconds in (from, to] at whose polls no leader was up (one poll = `everyMs`). */
  leaderlessMs(from: number, to: number): number {
    return this.leaderless.filter((at) => at > from && at <= to).length * this.everyMs;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

/** A lease left to expire: its key, TTL and the time of its last acknowledged renewal. */
interface Abandoned {
  key: string;
  id: bigint;
  ttl: number;
  /** performance.now() of the grant's or last keep-alive's answer. */
  lastAck: number;
  /** A keep-alive went unanswered: not judged. */
  unsure: boolean;
  /** performance.now() at the start of the first read that saw the key gone. */
  goneBy?: number;
}

export interface AbandonedLeases {
  readonly leases: Abandoned[];
  readonly violations: string[];
  /** The largest margin seen: (first read seeing the key gone) - (last ack + TTL), ms. */
  worstOverrunMs: number;
  /** The most leader changes one judged lease's window saw. */
  mostChanges: number;
}

/**
 * Every `everyMs`, a lease of a TTL in `ttls` with a key, kept alive 0-2 times 300 ms
 * apart, then left; a checker reads every left key every 100 ms until it is gone.
 * `boundMs`: how long past last ack + TTL a key may still be read, per leader change
 * `terms` saw since the last ack (at least once), beyond the time it saw no leader.
 */
export async function abandonLeases(
  addresses: readonly string[],
  ttls: readonly number[],
  everyMs: number,
  boundMs: number,
  terms: TermTracker,
  random: () => number,
  ctx: LoopContext,
  out: AbandonedLeases,
): Promise<void> {
  const m = new Members(addresses, 1, 1000);
  const reader = new Members(addresses, 2, 1000);
  let checking = true;
  const checker = (async () => {
    while (checking) {
      for (const a of out.leases) {
        if (a.goneBy !== undefined || a.unsure) continue;
        const started = performance.now();
        try {
          const r = await reader.current.range({ key: enc(a.key) });
          const changes = terms.changes(a.lastAck, started);
          const allowed =
            a.ttl * 1000 + boundMs * Math.max(1, changes) + terms.leaderlessMs(a.lastAck, started);
          if (r.kvs.length === 0) {
            a.goneBy = started;
            out.worstOverrunMs = Math.max(out.worstOverrunMs, started - a.lastAck - a.ttl * 1000);
            out.mostChanges = Math.max(out.mostChanges, changes);
          } else if (started > a.lastAck + allowed) {
            out.violations.push(
              `${a.key}: lease ${a.id} (TTL ${a.ttl} s) still had its key ${Math.round(started - a.lastAck)} ms after its last acknowledged renewal (allowed ${Math.round(allowed)} ms: TTL + ${boundMs} ms x ${Math.max(1, changes)} for ${changes} leader changes + ${terms.leaderlessMs(a.lastAck, started)} ms without a leader)`,
            );
            a.goneBy = started;
          }
        } catch {
          reader.next();
        }
      }
      await sleep(100);
    }
  })();
  try {
    for (let n = 0; !ctx.stop(); n++) {
      const ttl = ttls[Math.floor(random() * ttls.length)]!;
      const renewals = Math.floor(random() * 3);
      const key = `lease/left/${n}`;
      const g = await grant(m, ttl);
      if (g !== undefined && (await putOnLease(m, key, g.id, g.at + ttl * 500, ctx))) {
        const a: Abandoned = { key, id: g.id, ttl, lastAck: g.at, unsure: false };
        for (let i = 0; i < renewals && !ctx.stop(); i++) {
          await sleep(300);
          const answered = await keepAlive(m, g.id);
          if (answered === undefined) a.unsure = true;
          else if (answered > 0) a.lastAck = performance.now();
        }
        out.leases.push(a);
      }
      await sleep(everyMs);
    }
    // Every left lease's deadline passes before the checker stops.
    const until = (a: Abandoned) => {
      const t = performance.now();
      return (
        a.lastAck +
        a.ttl * 1000 +
        boundMs * Math.max(1, terms.changes(a.lastAck, t)) +
        terms.leaderlessMs(a.lastAck, t)
      );
    };
    const last = Math.max(0, ...out.leases.map(until));
    while (
      performance.now() < last + 500 &&
      out.leases.some((a) => a.goneBy === undefined && !a.unsure)
    ) {
      await sleep(100);
    }
  } finally {
    checking = false;
    await checker;
    m.close();
    reader.close();
  }
}

/** An applied fenced write: its revision, client and the lock key's create revision. */
export interface FencedWrite {
  readonly revision: number;
  readonly client: string;
  readonly lockRevision: number;
}

export interface FencedLocker {
  readonly name: string;
  readonly writes: FencedWrite[];
  acquisitions: number;
  refused: number;
}

/**
 * Lock `lockName` on a lease of its own (TTL `ttl`, kept alive in the background), then
 * `writes` fenced writes to `resource`, then Unlock; over and over until `stop`.
 */
export async function fencedLocker(
  addresses: readonly string[],
  first: number,
  lockName: string,
  resource: string,
  ttl: number,
  ctx: LoopContext,
  out: FencedLocker,
): Promise<void> {
  const m = new Members(addresses, first, 3000);
  try {
    while (!ctx.stop()) {
      const g = await grant(m, ttl);
      if (g === undefined) continue;
      const lost = { value: false };
      const keeper = (async () => {
        const k = new Members(addresses, first + 1, 1000);
        try {
          while (!ctx.stop() && !lost.value) {
            await sleep((ttl * 1000) / 3);
            const answered = await keepAlive(k, g.id);
            if (answered === 0) lost.value = true;
          }
        } finally {
          k.close();
        }
      })();
      try {
        let key: Uint8Array | undefined;
        try {
          key = decodeLockKey(await m.current.raw(LOCK, "Lock", encodeLock(enc(lockName), g.id)));
        } catch {
          m.next();
          continue;
        }
        out.acquisitions++;
        const held = await m.current.range({ key }).catch(() => undefined);
        const lockRevision = Number(held?.kvs[0]?.createRevision ?? 0n);
        if (lockRevision === 0) continue;
        for (let i = 0; i < 3 && !ctx.stop() && !lost.value; i++) {
          try {
            const r = await m.current.txn({
              compare: [
                {
                  key,
                  target: Compare_CompareTarget.CREATE,
                  result: Compare_CompareResult.EQUAL,
                  targetUnion: { case: "createRevision", value: BigInt(lockRevision) },
                },
              ],
              success: [
                {
                  request: {
                    case: "requestPut",
                    value: { key: enc(resource), value: enc(`${out.name}:${lockRevision}`) },
                  },
                },
              ],
            });
            if (r.succeeded) {
              out.writes.push({
                revision: Number(r.header?.revision ?? 0n),
                client: out.name,
                lockRevision,
              });
            } else out.refused++;
          } catch {
            m.next();
          }
        }
        await m.current.raw(LOCK, "Unlock", encodeUnlock(key)).catch(() => m.next());
      } finally {
        lost.value = true;
        await keeper;
      }
    }
  } finally {
    m.close();
  }
}

/**
 * The fencing rule over every client's applied fenced writes: in revision order, lock
 * revisions never decrease. Returns the violations.
 */
export function checkFencing(writes: readonly FencedWrite[]): string[] {
  const sorted = [...writes].sort((a, b) => a.revision - b.revision);
  const out: string[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (b.lockRevision < a.lockRevision) {
      out.push(
        `fencing: ${b.client}'s write at revision ${b.revision} under the lock of revision ${b.lockRevision} applied after ${a.client}'s at ${a.revision} under ${a.lockRevision}`,
      );
    }
  }
  return out;
}
