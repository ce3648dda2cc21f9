/**
 * Checks the event streams of watchers that resumed across members under faults
 * (etcd-resuming-watcher.ts) against the history of transactions the clients recorded
 * (etcd-chaos-workload.ts), in the manner of etcd's robustness tests (validate/watch.go).
 * Every put the workload makes carries a value no other write uses, so a put event names
 * its write.
 *
 * A watcher covers the revisions from its start revision to `through` (every event up to
 * there received), less those lost to compaction. `checkWatchHistory` returns the
 * failures (empty: all held):
 * - unique and ordered: no (revision, key) twice in a watcher's stream, revisions never
 *   going back, a revision's events in key order;
 * - watchers agree: two watchers covering a revision received the same events at it;
 * - reliable, with the revision its response carried: every acknowledged write that
 *   changed something has, in every watcher covering its header revision, exactly its
 *   events at that revision (its puts' keys and values, as many deletes as it deleted);
 * - nothing invented, nothing twice: the events of a revision no acknowledged write
 *   carried are those of one write of unknown outcome, and each such write appears at
 *   most once;
 * - the MVCC of the events: create revision, version and mod revision follow from the
 *   earlier events (the keys start absent); prev_kv is the key's previous version (none
 *   after a delete or for a creation; it may be missing only at or below a compaction);
 * - the state the events end in is the final read's (`final`: its kvs and revision).
 */

import type { WatchedEvent, WatchedKv } from "./etcd-resuming-watcher.js";
import type { TxnInput, TxnKv, TxnOperation } from "./linearizability/index.js";
import type { TxnOp } from "./linearizability/txn-model.js";

export interface CheckedWatcher {
  readonly name: string;
  readonly startRevision: number;
  readonly through: number;
  readonly prevKv: boolean;
  readonly events: readonly WatchedEvent[];
  readonly gaps: readonly { from: number; to: number }[];
}

export interface WatchCheckInput {
  readonly history: readonly TxnOperation[];
  readonly watchers: readonly CheckedWatcher[];
  /** The highest revision any Compact asked for (acknowledged or not), 0 if none. */
  readonly compactedTo: number;
  /** The final linearizable read of the whole watched range. */
  readonly final: { readonly revision: number; readonly kvs: readonly TxnKv[] };
}

const covers = (w: CheckedWatcher, r: number): boolean =>
  r >= w.startRevision && r <= w.through && !w.gaps.some((g) => r >= g.from && r < g.to);

/** An event as compared between watchers (prev_kv aside: not every watcher asks for it). */
const shown = (e: WatchedEvent): string =>
  e.type === "put"
    ? `put ${e.kv.key}=${e.kv.value} c${e.kv.createRevision} m${e.kv.modRevision} v${e.kv.version}`
    : `delete ${e.kv.key} m${e.kv.modRevision}`;

const showKv = (kv: WatchedKv | undefined): string =>
  kv === undefined
    ? "none"
    : `${kv.key}=${kv.value} c${kv.createRevision} m${kv.modRevision} v${kv.version}`;

function inRange(k: string, op: { key: string; end?: string }): boolean {
  if (op.end === undefined || op.end === "") return k === op.key;
  return k >= op.key && k < op.end;
}

/** The writes of the branch a transaction took (or would take, for an unknown outcome). */
function writesOf(input: TxnInput, succeeded: boolean): TxnOp[] {
  return (succeeded ? input.success : input.failure).filter((o) => o.type !== "range");
}

/** Whether `events` (one revision's) are what `ops` make, deleting `deleted` keys (-1: any number but 0). */
function matches(events: readonly WatchedEvent[], ops: readonly TxnOp[], deleted: number): boolean {
  const puts = new Map<string, string>();
  for (const o of ops) if (o.type === "put") puts.set(o.key, o.value);
  const deletes = ops.filter((o) => o.type === "delete");
  let deletesSeen = 0;
  for (const e of events) {
    if (e.type === "put") {
      if (puts.get(e.kv.key) !== e.kv.value) return false;
      puts.delete(e.kv.key);
    } else {
      if (!deletes.some((d) => inRange(e.kv.key, d))) return false;
      deletesSeen++;
    }
  }
  return (
    puts.size === 0 &&
    (deleted === -1 ? deletesSeen > 0 || deletes.length === 0 : deletesSeen === deleted)
  );
}

export function checkWatchHistory(input: WatchCheckInput): string[] {
  const failures: string[] = [];
  const fail = (s: string) => {
    if (failures.length < 40) failures.push(s);
  };
  // Each watcher's events by revision; unique and ordered.
  const byWatcher = input.watchers.map((w) => {
    const at = new Map<number, WatchedEvent[]>();
    let last: WatchedEvent | undefined;
    for (const e of w.events) {
      if (
        last !== undefined &&
        (e.revision < last.revision || (e.revision === last.revision && e.kv.key <= last.kv.key))
      ) {
        fail(
          `${w.name}: ${e.kv.key}@${e.revision} (${e.member}) after ${last.kv.key}@${last.revision} (${last.member})`,
        );
      }
      last = e;
      if (!covers(w, e.revision)) {
        fail(`${w.name}: an event at ${e.revision}, outside what it watched`);
      }
      const list = at.get(e.revision) ?? [];
      list.push(e);
      at.set(e.revision, list);
    }
    return at;
  });
  // The union, and every covering watcher's agreement with it.
  const union = new Map<number, WatchedEvent[]>();
  for (const at of byWatcher) for (const [r, es] of at) if (!union.has(r)) union.set(r, es);
  const revisions = [...union.keys()].sort((a, b) => a - b);
  for (const r of revisions) {
    const want = union.get(r)!.map(shown).join("; ");
    input.watchers.forEach((w, i) => {
      if (!covers(w, r)) return;
      const got = (byWatcher[i]!.get(r) ?? []).map(shown).join("; ");
      if (got !== want) fail(`${w.name} at ${r}: [${got}], another watcher: [${want}]`);
    });
  }
  // Acknowledged writes: their events at their header revision.
  const claimed = new Set<number>();
  const unknown: TxnOperation[] = [];
  for (const op of input.history) {
    if (op.output === undefined) {
      if (writesOf(op.input, true).length > 0) unknown.push(op);
      continue;
    }
    const ops = writesOf(op.input, op.output.succeeded);
    if (ops.length === 0) continue;
    const deleted = op.output.results.reduce(
      (n, x) => n + (x.type === "delete" ? x.deleted : 0),
      0,
    );
    if (!ops.some((o) => o.type === "put") && deleted === 0) continue;
    const r = op.output.revision;
    if (claimed.has(r)) fail(`two acknowledged writes answered revision ${r}`);
    claimed.add(r);
    const what = `client ${op.client}'s ${JSON.stringify(ops)} answered at ${r}`;
    const events = union.get(r);
    if (events === undefined) {
      const who = input.watchers.filter((w) => covers(w, r)).map((w) => w.name);
      if (who.length > 0) fail(`${what}: no event in ${who.join(", ")}`);
      continue;
    }
    if (!matches(events, ops, deleted)) fail(`${what}: events [${events.map(shown).join("; ")}]`);
  }
  // The other revisions: one write of unknown outcome each, used once.
  const used = new Set<TxnOperation>();
  const isWholeDelete = (op: TxnOperation) =>
    op.input.success.some((o) => o.type === "delete" && o.end !== undefined);
  for (const r of revisions) {
    if (claimed.has(r)) continue;
    const events = union.get(r)!;
    const candidates = unknown
      .filter((op) => matches(events, writesOf(op.input, true), -1))
      // A delete of one key before a delete of every key, which may match more later.
      .sort((a, b) => Number(isWholeDelete(a)) - Number(isWholeDelete(b)));
    const op = candidates.find((c) => !used.has(c));
    const what = `events at ${r} [${events.map(shown).join("; ")}]`;
    if (op !== undefined) used.add(op);
    else if (candidates.length > 0) fail(`${what}: their write appeared already`);
    else fail(`${what}: made by no write`);
  }
  // The MVCC the events imply, from absent keys; "unknown" after a revision no one covered.
  const first = Math.min(...input.watchers.map((w) => w.startRevision));
  const last = Math.max(...input.watchers.map((w) => w.through));
  type Known = WatchedKv | "absent" | "unknown";
  const state = new Map<string, Known>();
  let fallback: Known = "absent";
  for (let r = first; r <= last; r++) {
    if (!input.watchers.some((w) => covers(w, r))) {
      for (const k of state.keys()) state.set(k, "unknown");
      fallback = "unknown";
      continue;
    }
    const prevKvs = new Map<string, (WatchedKv | undefined)[]>();
    input.watchers.forEach((w, i) => {
      if (!covers(w, r)) return;
      for (const e of byWatcher[i]!.get(r) ?? []) {
        if (!w.prevKv && e.prevKv !== undefined) fail(`${w.name}: prev_kv at ${r} unasked`);
        if (!w.prevKv) continue;
        const list = prevKvs.get(e.kv.key) ?? [];
        list.push(e.prevKv);
        prevKvs.set(e.kv.key, list);
      }
    });
    for (const e of union.get(r) ?? []) {
      const prior = state.get(e.kv.key) ?? fallback;
      const where = `${e.type} ${e.kv.key} at ${r}`;
      if (prior !== "unknown") {
        const was = prior === "absent" ? undefined : prior;
        for (const p of prevKvs.get(e.kv.key) ?? []) {
          const missingOk = p === undefined && r <= input.compactedTo;
          if (!missingOk && showKv(p) !== showKv(was)) {
            fail(`${where}: prev_kv ${showKv(p)}, the key was ${showKv(was)}`);
          }
        }
      }
      if (e.type === "delete") {
        if (prior === "absent") fail(`${where}: the key was absent`);
        state.set(e.kv.key, "absent");
        continue;
      }
      const want =
        prior === "unknown"
          ? undefined
          : prior === "absent"
            ? { createRevision: r, version: 1 }
            : { createRevision: prior.createRevision, version: prior.version + 1 };
      if (
        e.kv.modRevision !== r ||
        (want !== undefined &&
          (e.kv.createRevision !== want.createRevision || e.kv.version !== want.version))
      ) {
        fail(`${where}: ${showKv(e.kv)}, expected c${want?.createRevision} v${want?.version}`);
      }
      state.set(e.kv.key, e.kv);
    }
    if (r === input.final.revision) {
      const known = [...state.values()];
      if (fallback === "unknown" || known.includes("unknown")) continue;
      const ended = known
        .flatMap((kv) => (typeof kv === "string" ? [] : [showKv(kv)]))
        .sort()
        .join(", ");
      const read = input.final.kvs.map(showKv).sort().join(", ");
      if (ended !== read) fail(`at ${r} the events end in [${ended}], the final read: [${read}]`);
    }
  }
  return failures;
}
