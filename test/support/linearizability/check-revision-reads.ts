/**
 * The check of reads at a revision (etcd's Range with `revision: R`) in a history of
 * transactions (check-txn.ts), without a search: every answer in the history says
 * something certain about the store at some revision, and all of it must agree.
 *
 * - A known answer whose chosen branch only reads, at header revision R: each workload key
 *   in each range it read was exactly as returned at R (absent iff not returned).
 * - A known answer whose chosen branch writes, at header revision W: each key it put held
 *   that value with mod revision W at W; each workload key in a range it deleted was absent.
 * - A read at revision R: each workload key in its range was exactly as returned at R;
 *   every returned kv has mod revision <= R and create revision <= mod revision.
 *
 * Claims about one key at one revision must agree (presence; value, create and mod
 * revision and version where both say). Compaction: a read at R answered "compacted" needs
 * a compaction to a revision above R invoked before the read returned; a read at R
 * answered with kvs may not follow an acknowledged compaction above R (returned before the
 * read was invoked).
 */
import type { TxnOperation } from "./check-txn.js";
import type { TxnKv, TxnOp } from "./txn-model.js";

/** A Range at revision `revision` and what it answered. */
export interface RevisionRead {
  readonly client: number;
  readonly key: string;
  /** As in the txn model: absent or "" for the key alone. */
  readonly end?: string;
  readonly revision: number;
  readonly call: number;
  readonly return: number;
  /** The kvs in key order, or "compacted" (etcd's "required revision has been compacted"). */
  readonly answer: readonly TxnKv[] | "compacted";
}

/** A Compact call: `acknowledged` iff answered OK (else its outcome is unknown). */
export interface CompactCall {
  readonly revision: number;
  readonly call: number;
  readonly return: number;
  readonly acknowledged: boolean;
}

interface Claim {
  readonly source: string;
  readonly present: boolean;
  readonly value?: string;
  readonly createRevision?: number;
  readonly modRevision?: number;
  readonly version?: number;
}

function inRange(k: string, key: string, end: string | undefined): boolean {
  if (end === undefined || end === "") return k === key;
  if (end === "\0") return k >= key;
  return k >= key && k < end;
}

function describeClaim(c: Claim): string {
  if (!c.present) return `absent (${c.source})`;
  const fields = [
    `value ${JSON.stringify(c.value)}`,
    c.createRevision === undefined ? "" : `create ${c.createRevision}`,
    c.modRevision === undefined ? "" : `mod ${c.modRevision}`,
    c.version === undefined ? "" : `version ${c.version}`,
  ].filter((f) => f !== "");
  return `${fields.join(" ")} (${c.source})`;
}

/** The fields of `c` that are set. */
function definedOf(c: Claim): Partial<Claim> {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
}

function agree(a: Claim, b: Claim): boolean {
  if (a.present !== b.present) return false;
  if (!a.present) return true;
  const same = <T>(x: T | undefined, y: T | undefined) =>
    x === undefined || y === undefined || x === y;
  return (
    same(a.value, b.value) &&
    same(a.createRevision, b.createRevision) &&
    same(a.modRevision, b.modRevision) &&
    same(a.version, b.version)
  );
}

/**
 * Checks `reads` against `history` and each other, and against `compactions`; `keys` are
 * every key the workload writes. Returns the violations found (empty: none), each one line.
 */
export function checkRevisionReads(
  history: readonly TxnOperation[],
  reads: readonly RevisionRead[],
  compactions: readonly CompactCall[],
  keys: readonly string[],
): string[] {
  const claims = new Map<number, Map<string, Claim[]>>();
  const claim = (revision: number, key: string, c: Claim) => {
    let at = claims.get(revision);
    if (at === undefined) {
      at = new Map();
      claims.set(revision, at);
    }
    const list = at.get(key);
    if (list === undefined) at.set(key, [c]);
    else list.push(c);
  };
  const claimRange = (
    revision: number,
    key: string,
    end: string | undefined,
    kvs: readonly TxnKv[],
    source: string,
  ) => {
    for (const k of keys) {
      if (!inRange(k, key, end)) continue;
      const kv = kvs.find((x) => x.key === k);
      claim(
        revision,
        k,
        kv === undefined ? { source, present: false } : { source, ...kv, present: true },
      );
    }
  };

  history.forEach((op, position) => {
    const out = op.output;
    if (out === undefined) return;
    const branch: readonly TxnOp[] = out.succeeded ? op.input.success : op.input.failure;
    const source = `operation #${position} (client ${op.client}, [${op.call}, ${op.return}])`;
    if (branch.every((o) => o.type === "range")) {
      branch.forEach((o, i) => {
        const r = out.results[i];
        if (r?.type === "range") claimRange(out.revision, o.key, o.end, r.kvs, source);
      });
      return;
    }
    // A writing branch: the last effect on each key, at the txn's revision.
    const last = new Map<string, Claim>();
    for (const o of branch) {
      if (o.type === "put") {
        last.set(o.key, { source, present: true, value: o.value, modRevision: out.revision });
      } else if (o.type === "delete") {
        for (const k of keys) if (inRange(k, o.key, o.end)) last.set(k, { source, present: false });
      }
    }
    for (const [k, c] of last) claim(out.revision, k, c);
  });

  const violations: string[] = [];
  reads.forEach((read, position) => {
    const source = `read #${position} at revision ${read.revision} (client ${read.client}, [${read.call}, ${read.return}])`;
    if (read.answer === "compacted") {
      const cause = compactions.find((c) => c.revision > read.revision && c.call < read.return);
      if (cause === undefined) {
        violations.push(`${source}: answered "compacted", but no compaction above it was asked`);
      }
      return;
    }
    const done = compactions.find(
      (c) => c.acknowledged && c.revision > read.revision && c.return < read.call,
    );
    if (done !== undefined) {
      violations.push(
        `${source}: answered, after a compaction to ${done.revision} was acknowledged at ${done.return}`,
      );
    }
    for (const kv of read.answer) {
      if (kv.modRevision > read.revision || kv.createRevision > kv.modRevision) {
        violations.push(`${source}: returned ${JSON.stringify(kv)}, past the revision read`);
      }
      if (!keys.includes(kv.key)) violations.push(`${source}: returned unknown key ${kv.key}`);
    }
    claimRange(read.revision, read.key, read.end, read.answer, source);
  });

  for (const [revision, byKey] of [...claims].sort((a, b) => a[0] - b[0])) {
    for (const [key, list] of byKey) {
      // Each claim against what the earlier ones said together.
      let known = list[0]!;
      for (const c of list.slice(1)) {
        if (!agree(known, c)) {
          violations.push(
            `key ${JSON.stringify(key)} at revision ${revision}: ${describeClaim(known)}, but ${describeClaim(c)}`,
          );
          break;
        }
        known = { ...c, ...definedOf(known) };
      }
    }
  }
  return violations;
}
