/**
 * The differential harness of etcd's KV API: seeded random sequences of Range (every
 * option), Put, DeleteRange, Txn (nested, compares on keys and ranges) and Compact, and of
 * the Lease calls (grant with client-chosen IDs and long TTLs, or too large ones; revoke;
 * time-to-live, with keys; leases, compared as a sorted list), puts naming the sequence's
 * leases (granted or not), sent
 * through the same gRPC client code to a real etcd and to kv-engine, and their answers
 * compared field by field: responses (except the top-level header's cluster_id,
 * member_id and raft_term, docs/etcd.md) or error codes and messages.
 *
 * A sequence works in a key space of its own (its prefix) over ten keys, so compares and
 * ranges hit; it ends by deleting its keys, so that ranges to "\0" of later sequences see
 * only theirs (at most 12 keys: etcd sorts up to 12 stably, sort-kvs.ts). Revisions it
 * picks are relative to the revision it started at, so a seed replays alike on stores
 * whose revision differs. Left out: what etcd 3.4 panics on (a put with ignore_value or
 * ignore_lease in a txn with a delete to "\0") and a Compact to 0 on a store never
 * compacted (docs/etcd.md).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type CompactionRequestSchema,
  type Compare,
  CompareSchema,
  DeleteRangeRequestSchema,
  type PutRequest,
  PutRequestSchema,
  RangeRequestSchema,
  type RequestOp,
  RequestOpSchema,
  type TxnRequest,
  TxnRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type EtcdGrpcClient, isServiceError } from "./etcd-grpc-client.js";
import { randInt, rng } from "./random.js";

type RangeInit = MessageInitShape<typeof RangeRequestSchema>;
type PutInit = MessageInitShape<typeof PutRequestSchema>;
type DeleteInit = MessageInitShape<typeof DeleteRangeRequestSchema>;
type CompactInit = MessageInitShape<typeof CompactionRequestSchema>;

export type DiffOp =
  | { kind: "range"; req: RangeInit }
  | { kind: "put"; req: PutInit }
  | { kind: "delete"; req: DeleteInit }
  | { kind: "txn"; req: TxnRequest }
  | { kind: "compact"; req: CompactInit }
  | { kind: "leaseGrant"; req: { ID: bigint; TTL: bigint } }
  | { kind: "leaseRevoke"; req: { ID: bigint } }
  | { kind: "leaseTimeToLive"; req: { ID: bigint; keys: boolean } }
  | { kind: "leaseLeases" };

/** TTLs a sequence grants: long enough not to expire during it, and one over etcd's limit. */
const LEASE_TTLS = [1000n, 3000n, 9_000_000_001n];

const SUFFIXES = ["a", "a1", "a2", "b", "b/x", "b/y", "c", "d", "e", "f"];
const VALUES = ["", "v1", "v2", "zz"];

/** What the generator knows of the store: revisions to pick from. */
export interface Knowledge {
  /** The revision when the sequence began. */
  base: number;
  /** The last revision seen in a response. */
  current: number;
  /** True once any compaction succeeded in the run. */
  compacted: boolean;
}

export class Gen {
  constructor(
    private readonly r: () => number,
    private readonly prefix: string,
    private readonly k: Knowledge,
    /**
     * For etcd-watch-differential.ts: no Compact (a range instead; it compacts on its
     * own), and no txn with a delete to "\0" and a put (etcd 3.4 then lets a key change
     * twice in a revision and sends both events: docs/etcd.md).
     */
    private readonly forWatch = false,
    /** The lease IDs the sequence uses: 1, 2, 3 above this. */
    leaseBase = 0n,
  ) {
    this.leases = [leaseBase + 1n, leaseBase + 2n, leaseBase + 3n];
  }

  readonly leases: readonly bigint[];

  int(n: number): number {
    return randInt(this.r, n);
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  key(): Buffer {
    return Buffer.from(this.prefix + this.pick(SUFFIXES));
  }
  value(): Buffer {
    return Buffer.from(this.pick(VALUES));
  }
  /** A revision near the sequence's: below its start, within it, or a little ahead. */
  revision(): bigint {
    const span = this.k.current - this.k.base;
    return BigInt(this.k.base - 2 + this.int(span + 5));
  }
  /** A range end for `key`: one key, a prefix, "\0", another key (maybe below), empty. */
  rangeEnd(key: Buffer): Buffer {
    switch (this.int(6)) {
      case 0:
      case 1:
        return Buffer.alloc(0);
      case 2:
        return Buffer.from([0]);
      case 3: {
        const end = Buffer.from(key);
        end[end.length - 1]!++;
        return end;
      }
      case 4:
        return Buffer.from(`${this.prefix}\xff`);
      default:
        return this.key();
    }
  }

  range(): RangeInit {
    const key = this.chance(0.05) ? Buffer.from(this.prefix) : this.key();
    const req: RangeInit = { key, rangeEnd: this.rangeEnd(key) };
    if (this.chance(0.4)) req.limit = BigInt(this.int(5) - 1);
    if (this.chance(0.3)) req.revision = this.revision();
    if (this.chance(0.4)) req.sortOrder = this.int(3);
    if (this.chance(0.4)) req.sortTarget = this.int(5);
    if (this.chance(0.2)) req.keysOnly = true;
    if (this.chance(0.15)) req.countOnly = true;
    if (this.chance(0.3)) req.serializable = true;
    if (this.chance(0.1)) req.minModRevision = this.revision();
    if (this.chance(0.1)) req.maxModRevision = this.revision();
    if (this.chance(0.1)) req.minCreateRevision = this.revision();
    if (this.chance(0.1)) req.maxCreateRevision = this.revision();
    if (this.chance(0.02)) req.key = Buffer.alloc(0);
    return req;
  }

  put(inTxn: boolean): PutInit {
    const req: PutInit = { key: this.key(), value: this.value() };
    if (this.chance(0.3)) req.prevKv = true;
    if (this.chance(0.1)) {
      req.ignoreValue = true;
      if (this.chance(0.7)) req.value = Buffer.alloc(0);
    }
    if (this.chance(0.08)) req.ignoreLease = true;
    if (this.chance(inTxn ? 0.05 : 0.15)) req.lease = this.pick(this.leases);
    if (this.chance(0.02)) req.key = Buffer.alloc(0);
    return req;
  }

  delete(): DeleteInit {
    const key = this.key();
    const req: DeleteInit = { key, rangeEnd: this.rangeEnd(key) };
    if (this.chance(0.4)) req.prevKv = true;
    if (this.chance(0.02)) req.key = Buffer.alloc(0);
    return req;
  }

  compare(): Compare {
    const key = this.key();
    const c = create(CompareSchema, {
      key,
      rangeEnd: this.chance(0.3) ? this.rangeEnd(key) : Buffer.alloc(0),
      result: this.int(4),
      target: this.int(5),
    });
    switch (c.target) {
      case 0:
        c.targetUnion = { case: "version", value: BigInt(this.int(4)) };
        break;
      case 1:
        c.targetUnion = { case: "createRevision", value: this.chance(0.3) ? 0n : this.revision() };
        break;
      case 2:
        c.targetUnion = { case: "modRevision", value: this.chance(0.3) ? 0n : this.revision() };
        break;
      case 3:
        c.targetUnion = { case: "value", value: this.value() };
        break;
      default:
        c.targetUnion = {
          case: "lease",
          value: this.chance(0.5) ? BigInt(this.int(2)) : this.pick(this.leases),
        };
    }
    return c;
  }

  ops(depth: number): RequestOp[] {
    const n = this.int(depth === 0 ? 5 : 3);
    const out: RequestOp[] = [];
    for (let i = 0; i < n; i++) {
      const which = this.int(depth < 2 ? 10 : 9);
      const request: RequestOp["request"] =
        which < 3
          ? { case: "requestRange", value: create(RangeRequestSchema, this.range()) }
          : which < 6
            ? { case: "requestPut", value: create(PutRequestSchema, this.put(true)) }
            : which < 9
              ? {
                  case: "requestDeleteRange",
                  value: create(DeleteRangeRequestSchema, this.delete()),
                }
              : { case: "requestTxn", value: this.txn(depth + 1) };
      out.push(create(RequestOpSchema, { request }));
    }
    return out;
  }

  txn(depth = 0): TxnRequest {
    const compare = Array.from({ length: this.int(4) }, () => this.compare());
    return create(TxnRequestSchema, {
      compare,
      success: this.ops(depth),
      failure: this.ops(depth),
    });
  }

  compact(): CompactInit {
    let revision = this.revision();
    if (revision < 1n) revision = 1n;
    return { revision, physical: this.chance(0.3) };
  }

  leaseOp(): DiffOp {
    const w = this.int(10);
    const ID = this.pick(this.leases);
    if (w < 4) return { kind: "leaseGrant", req: { ID, TTL: this.pick(LEASE_TTLS) } };
    if (w < 6) return { kind: "leaseRevoke", req: { ID } };
    if (w < 9) return { kind: "leaseTimeToLive", req: { ID, keys: this.chance(0.5) } };
    return { kind: "leaseLeases" };
  }

  op(): DiffOp {
    if (!this.forWatch && this.chance(0.2)) return this.leaseOp();
    const w = this.int(20);
    if (w < 6) return { kind: "range", req: this.range() };
    if (w < 11) return { kind: "put", req: this.put(false) };
    if (w < 13) return { kind: "delete", req: this.delete() };
    if (w < 19) {
      let req = this.txn();
      while (panicsEtcd(req) || (this.forWatch && changesTwice(req))) req = this.txn();
      return { kind: "txn", req };
    }
    if (this.forWatch) return { kind: "range", req: this.range() };
    return { kind: "compact", req: this.compact() };
  }
}

/** True iff `req` holds a delete to "\0" and a put with ignore_value or ignore_lease. */
function panicsEtcd(req: TxnRequest): boolean {
  return zeroDeleteAndPut(req, (p) => p.ignoreValue || p.ignoreLease);
}

/** True iff `req` holds a delete to "\0" and a put. */
function changesTwice(req: TxnRequest): boolean {
  return zeroDeleteAndPut(req, () => true);
}

function zeroDeleteAndPut(req: TxnRequest, put: (p: PutRequest) => boolean): boolean {
  let zeroDelete = false;
  let putting = false;
  const walk = (ops: readonly RequestOp[]) => {
    for (const op of ops) {
      const r = op.request;
      if (
        r.case === "requestDeleteRange" &&
        r.value.rangeEnd.length === 1 &&
        r.value.rangeEnd[0] === 0
      )
        zeroDelete = true;
      if (r.case === "requestPut" && put(r.value)) putting = true;
      if (r.case === "requestTxn") {
        walk(r.value.success);
        walk(r.value.failure);
      }
    }
  };
  walk(req.success);
  walk(req.failure);
  return zeroDelete && putting;
}

/** A response or error as comparable JSON text, ids of the top-level header left out. */
export type Outcome = { ok: unknown } | { error: { code: number; message: string } };

export async function send(client: EtcdGrpcClient, op: DiffOp): Promise<Outcome> {
  try {
    let res: { header?: { clusterId: bigint; memberId: bigint; raftTerm: bigint } | undefined };
    switch (op.kind) {
      case "range":
        res = await client.range(op.req);
        break;
      case "put":
        res = await client.put(op.req);
        break;
      case "delete":
        res = await client.deleteRange(op.req);
        break;
      case "txn":
        res = await client.txn(op.req);
        break;
      case "compact":
        res = await client.compact(op.req);
        break;
      case "leaseGrant":
        res = await client.leaseGrant(op.req);
        break;
      case "leaseRevoke":
        res = await client.leaseRevoke(op.req);
        break;
      case "leaseTimeToLive":
        res = await client.leaseTimeToLive(op.req);
        break;
      case "leaseLeases": {
        const r = await client.leaseLeases();
        // etcd lists its leases in map order.
        r.leases.sort((x, y) => (x.ID < y.ID ? -1 : x.ID > y.ID ? 1 : 0));
        res = r;
        break;
      }
    }
    if (res.header !== undefined) {
      res.header.clusterId = 0n;
      res.header.memberId = 0n;
      res.header.raftTerm = 0n;
    }
    return { ok: res };
  } catch (err) {
    if (!isServiceError(err)) throw err;
    return { error: { code: err.code, message: err.details } };
  }
}

/** JSON with bigints as text and bytes as latin1 strings (keys and values are ASCII). */
export function show(x: unknown): string {
  return JSON.stringify(x, function (this: Record<string, unknown>, k: string, v: unknown) {
    const raw = this[k];
    if (raw instanceof Uint8Array) return `b'${Buffer.from(raw).toString("latin1")}'`;
    return typeof v === "bigint" ? v.toString() : v;
  });
}

/** The revision a response reports, if any. */
export function revisionOf(o: Outcome): number | undefined {
  if (!("ok" in o)) return undefined;
  const h = (o.ok as { header?: { revision: bigint } }).header;
  return h === undefined ? undefined : Number(h.revision);
}

export interface Difference {
  seed: number;
  step: number;
  op: string;
  reference: string;
  ours: string;
}

export interface SequenceOptions {
  /** Ops per sequence. */
  length: number;
  /** Counts what was compared, by op kind and outcome (e.g. "txn ok", "put error 3"). */
  tally?: Map<string, number>;
}

/**
 * Runs sequence `seed` against both and returns the first difference (undefined: none).
 * `reference` is etcd; the sequence's keys are deleted at its end.
 */
export async function runSequence(
  seed: number,
  reference: EtcdGrpcClient,
  ours: EtcdGrpcClient,
  options: SequenceOptions,
): Promise<Difference | undefined> {
  const prefix = `s${seed}/`;
  const start = await reference.range({ key: Buffer.from(prefix) });
  const base = Number(start.header?.revision ?? 0n);
  const k: Knowledge = { base, current: base, compacted: false };
  const g = new Gen(rng(seed), prefix, k, false, BigInt(seed + 1) << 8n);
  const cleanup: DiffOp[] = [
    ...g.leases.map((ID): DiffOp => ({ kind: "leaseRevoke", req: { ID } })),
    {
      kind: "delete",
      req: { key: Buffer.from(prefix), rangeEnd: Buffer.from(`${prefix.slice(0, -1)}0`) },
    },
  ];
  for (let step = 0; step < options.length + cleanup.length; step++) {
    // Each op is drawn after the previous answers: the revisions it picks follow the store.
    const op = step < options.length ? g.op() : cleanup[step - options.length]!;
    const [a, b] = await Promise.all([send(reference, op), send(ours, op)]);
    const sa = show(a);
    const sb = show(b);
    if (sa !== sb) return { seed, step, op: show(op), reference: sa, ours: sb };
    const what = "ok" in a ? `${op.kind} ok` : `${op.kind} ${a.error.message}`;
    options.tally?.set(what, (options.tally.get(what) ?? 0) + 1);
    k.current = revisionOf(a) ?? k.current;
  }
  return undefined;
}
