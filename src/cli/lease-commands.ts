/**
 * `kv-engine lease grant|revoke|keep-alive|ttl|list`: etcd's Lease API. Lease IDs are
 * printed and read in hex, as etcdctl does. `keep-alive ID` renews a lease until
 * interrupted (exit 0; the lease then expires after its TTL) or until it is lost (exit 1:
 * expired, revoked elsewhere, or no renewal answered in time).
 */
import { create } from "@bufbuild/protobuf";
import { Lease } from "../client/etcd/etcd-lease.js";
import { etcdMethods } from "../client/etcd/etcd-methods.js";
import { LeaseGrantRequestSchema } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_OK, UsageError } from "./command.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  expectArgs,
  firstOf,
  hexId,
  interruption,
  line,
  parseLeaseId,
  runEtcdCommand,
} from "./etcd-command.js";

const USAGE = `Usage: kv-engine lease ACTION [options]

Actions (etcd's Lease API; IDs in hex, as etcdctl prints them):
  grant TTL                 grant a lease of TTL seconds; print its ID (not kept alive)
  revoke ID                 revoke a lease: its keys are deleted
  keep-alive ID             renew the lease until interrupted (SIGINT/SIGTERM: exit 0, the
                            lease then expires after its TTL) or until it is lost (exit 1);
                            one line per renewal ("--json": one object per line)
  ttl ID [--keys]           the seconds left and the TTL granted (-1: the lease is gone);
                            with --keys, its keys (alias: timetolive)
  list                      the IDs of every lease

Lease options:
  --keys                    (ttl) list the keys attached to the lease
`;

const OPTIONS = { keys: { type: "boolean" } } as const;

export function leaseCommand(argv: string[]): Promise<number> {
  return runEtcdCommand("lease", `${USAGE}\n${ETCD_COMMON_USAGE}`, argv, OPTIONS, async (ctx) => {
    const [action, ...rest] = ctx.args;
    switch (action) {
      case undefined:
        throw new UsageError("give an action: grant, revoke, keep-alive, ttl or list");
      case "grant":
        return grant(ctx, expectArgs(rest, ["TTL"])[0]!);
      case "revoke": {
        const id = parseLeaseId(expectArgs(rest, ["ID"])[0]!);
        await ctx.client.revoke(id);
        line(
          ctx.json
            ? JSON.stringify({ id: hexId(id), revoked: true })
            : `lease ${hexId(id)} revoked`,
        );
        return EXIT_OK;
      }
      case "keep-alive":
        return keepAlive(ctx, parseLeaseId(expectArgs(rest, ["ID"])[0]!));
      case "ttl":
      case "timetolive":
        return ttl(ctx, parseLeaseId(expectArgs(rest, ["ID"])[0]!));
      case "list": {
        expectArgs(rest, []);
        const ids = await ctx.client.leases();
        if (ctx.json) line(JSON.stringify({ leases: ids.map(hexId) }));
        else for (const id of ids) line(hexId(id));
        return EXIT_OK;
      }
      default:
        throw new UsageError(`unknown action '${action}' (grant, revoke, keep-alive, ttl, list)`);
    }
  });
}

async function grant(ctx: EtcdContext, text: string): Promise<number> {
  const seconds = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1) {
    throw new UsageError(`TTL must be a whole number of seconds >= 1, got '${text}'`);
  }
  const r = await ctx.client.calls.unary(
    "write",
    etcdMethods.LeaseGrant,
    create(LeaseGrantRequestSchema, { TTL: BigInt(seconds) }),
    undefined,
  );
  const id = hexId(r.ID);
  line(
    ctx.json
      ? JSON.stringify({ id, ttl: Number(r.TTL) })
      : `lease ${id} granted with TTL ${r.TTL} s`,
  );
  return EXIT_OK;
}

async function ttl(ctx: EtcdContext, id: bigint): Promise<number> {
  const keys = ctx.parsed.values.keys === true;
  const r = await ctx.client.timeToLive(id, { keys });
  if (ctx.json) {
    const out: Record<string, unknown> = { id: hexId(id), ttl: r.ttl, grantedTtl: r.grantedTtl };
    if (keys) {
      out.keys = r.keys.map((k) => {
        const o: Record<string, unknown> = {};
        ctx.format.key.json(o, "key", k);
        return o;
      });
    }
    line(JSON.stringify(out));
  } else if (r.ttl < 0) {
    line(`lease ${hexId(id)} is gone (expired or revoked)`);
  } else {
    line(`lease ${hexId(id)}: ${r.ttl} s left of ${r.grantedTtl} s granted`);
    if (keys) for (const k of r.keys) line(ctx.format.key.show(k));
  }
  return EXIT_OK;
}

/** How often renewals are looked for, to print them (a renewal comes every TTL/3). */
const PRINT_EVERY_MS = 100;

async function keepAlive(ctx: EtcdContext, id: bigint): Promise<number> {
  const state = await ctx.client.timeToLive(id);
  if (state.ttl < 0) throw new Error(`lease ${hexId(id)} is gone (expired or revoked)`);
  // Known alive for its remaining TTL from now; renewals then add the granted TTL.
  const grantedAt = Date.now() - (state.grantedTtl - state.ttl) * 1000;
  const lease = new Lease(ctx.client.calls, id, state.grantedTtl, grantedAt, () => {});
  const stop = interruption();
  let printed = 0;
  const print = () => {
    for (; printed < lease.renewals; printed++) {
      line(
        ctx.json
          ? JSON.stringify({ id: hexId(id), ttl: lease.ttl, renewals: printed + 1 })
          : `lease ${hexId(id)} renewed (TTL ${lease.ttl} s)`,
      );
    }
  };
  const timer = setInterval(print, PRINT_EVERY_MS);
  try {
    await firstOf(stop.signal, lease.lost);
    print();
    if (lease.lost.aborted) {
      const reason = lease.lost.reason as { serverCode?: unknown; message?: unknown };
      throw new Error(
        reason?.serverCode === "NOT_FOUND"
          ? `lease ${hexId(id)} was lost: it expired or was revoked`
          : `lease ${hexId(id)} was lost: no renewal was answered before its TTL ran out (${String(reason?.message ?? reason)})`,
      );
    }
    return EXIT_OK;
  } finally {
    clearInterval(timer);
    lease.release();
    stop.dispose();
  }
}
