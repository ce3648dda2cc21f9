/**
 * `kv-engine lock NAME [-- CMD ARGS...]` and `kv-engine elect NAME [VALUE] | --listen`:
 * etcd's v3lock and v3election services (EtcdClient's lock, campaign, observe). The wait
 * has no deadline unless --timeout-ms gives one; SIGINT/SIGTERM cancels it (the server
 * drops the waiter's key). Held: until interrupted, or while CMD runs (its exit code is
 * the command's); then released. Losing the lease (the server did not hear from us in
 * its TTL) ends the command with exit 1 (CMD is sent SIGTERM first).
 */
import { spawn } from "node:child_process";
import type { KeyValueRecord } from "../client/etcd/etcd-types.js";
import { EXIT_FAILURE, EXIT_OK, intOption, UsageError } from "./command.js";
import { DEFAULT_TIMEOUT_MS } from "./connection-options.js";
import {
  ETCD_COMMON_USAGE,
  type EtcdContext,
  etcdClient,
  firstOf,
  hexId,
  interruption,
  kvJson,
  line,
  runEtcdCommand,
} from "./etcd-command.js";

const LOCK_USAGE = `Usage: kv-engine lock [options] NAME [-- CMD ARGS...]

Waits for the lock NAME (etcd's v3lock API), then prints its key and fencing revision
(the key's create revision: it grows with each holder; pass it to what the lock guards)
and holds it until interrupted (SIGINT/SIGTERM: released, exit 0). With CMD, runs CMD
while holding the lock (its environment has ETCD_LOCK_KEY and ETCD_LOCK_REV), releases
the lock when it ends and exits with its exit code. Exits 1 when the lock's lease is
lost (CMD is then sent SIGTERM). The wait has no deadline unless --timeout-ms is given.

Lock options:
  --ttl N                   TTL in seconds of the lease holding the lock (default 60): how
                            long the lock outlives this command if it dies
`;

const ELECT_USAGE = `Usage: kv-engine elect [options] NAME VALUE
       kv-engine elect [options] --listen NAME

Campaigns in election NAME (etcd's v3election API) with VALUE: waits until elected, prints
the leader key and its revision, and leads until interrupted (SIGINT/SIGTERM: resigns,
exit 0); exit 1 when its lease is lost. With --listen, prints each leader's value as
it changes, one line each (--json: the key-value), until interrupted. The wait has no
deadline unless --timeout-ms is given.

Elect options:
  --listen                  observe the election instead of campaigning
  --ttl N                   TTL in seconds of the lease held while leading (default 60)
`;

/** What `hold` needs of a held lock or leadership. */
interface Held {
  readonly key: Buffer;
  readonly revision: number;
  readonly lease: { readonly id: bigint };
  readonly lost: AbortSignal;
}

/**
 * Waits with `wait` (cancelled by `interrupted`: then exit 0), prints the key and revision
 * (`words.held`), runs `during` (its result is the exit code), then `release`s. Throws,
 * naming `words.lost`, when the lease was lost meanwhile.
 */
async function hold<T extends Held>(
  ctx: EtcdContext,
  interrupted: AbortSignal,
  wait: (signal: AbortSignal) => Promise<T>,
  words: { held: string; lost: string },
  during: (held: T) => Promise<number>,
  release: (held: T) => Promise<void>,
): Promise<number> {
  const held = await wait(interrupted).catch((err: unknown) => {
    if (interrupted.aborted) return undefined;
    throw err;
  });
  if (held === undefined) return EXIT_OK;
  const out: Record<string, unknown> = {};
  ctx.format.key.json(out, "key", held.key);
  out.revision = held.revision;
  out.lease = hexId(held.lease.id);
  line(
    ctx.json
      ? JSON.stringify(out)
      : `${ctx.format.key.show(held.key)}\n${words.held} ${held.revision}`,
  );
  const code = await during(held);
  if (held.lost.aborted) {
    throw new Error(
      `lost ${words.lost}: its lease ${hexId(held.lease.id)} expired before it was renewed`,
    );
  }
  await release(held);
  return code;
}

function ttlOption(ctx: EtcdContext): number {
  return intOption(ctx.parsed, "ttl", 1, 9_000_000_000) ?? 60;
}

export function lockCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "lock",
    `${LOCK_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { ttl: { type: "string" } },
    async (outer) => {
      const [name, ...command] = outer.args;
      if (name === undefined) throw new UsageError("give the lock's NAME");
      const ctx = { ...outer, client: etcdClient(outer.parsed, true) };
      const stop = interruption();
      try {
        return await hold(
          ctx,
          stop.signal,
          (signal) =>
            ctx.client.lock(ctx.format.key.parse(name, "NAME"), { ttl: ttlOption(ctx), signal }),
          { held: "locked at fencing revision", lost: "the lock" },
          (held) =>
            command.length === 0
              ? firstOf(stop.signal, held.lost).then(() => EXIT_OK)
              : runHolding(command, held.key, held.revision, held.lost, stop.signal),
          (held) => held.unlock({ timeoutMs: DEFAULT_TIMEOUT_MS }),
        );
      } finally {
        stop.dispose();
        ctx.client.close();
      }
    },
  );
}

/**
 * Runs `command` (stdio inherited) with ETCD_LOCK_KEY/ETCD_LOCK_REV set; resolves with its
 * exit code (1 when it could not start, 128+N when killed by signal N). `lost` sends it
 * SIGTERM; an interruption of ours is left to it (a terminal's SIGINT reaches it too).
 */
function runHolding(
  command: string[],
  key: Buffer,
  revision: number,
  lost: AbortSignal,
  interrupted: AbortSignal,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), {
      stdio: "inherit",
      env: {
        ...process.env,
        ETCD_LOCK_KEY: key.toString("latin1"),
        ETCD_LOCK_REV: String(revision),
      },
    });
    const term = () => child.kill("SIGTERM");
    lost.addEventListener("abort", term, { once: true });
    interrupted.addEventListener("abort", term, { once: true });
    child.once("error", (err) => {
      process.stderr.write(`kv-engine lock: cannot run ${command[0]}: ${err.message}\n`);
      resolve(EXIT_FAILURE);
    });
    child.once("exit", (code, signal) => {
      lost.removeEventListener("abort", term);
      interrupted.removeEventListener("abort", term);
      resolve(code ?? (signal === null ? EXIT_FAILURE : 128 + signalNumber(signal)));
    });
  });
}

function signalNumber(signal: NodeJS.Signals): number {
  const n = (
    { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>
  )[signal];
  return n ?? 1;
}

export function electCommand(argv: string[]): Promise<number> {
  return runEtcdCommand(
    "elect",
    `${ELECT_USAGE}\n${ETCD_COMMON_USAGE}`,
    argv,
    { ttl: { type: "string" }, listen: { type: "boolean" } },
    async (outer) => {
      const ctx = { ...outer, client: etcdClient(outer.parsed, true) };
      const stop = interruption();
      try {
        if (ctx.parsed.values.listen === true) {
          if (ctx.args.length !== 1) throw new UsageError("--listen takes NAME only");
          return await listen(ctx, ctx.args[0]!, stop.signal);
        }
        if (ctx.args.length !== 2) throw new UsageError("give NAME and VALUE (or --listen NAME)");
        const [name, value] = ctx.args as [string, string];
        return await hold(
          ctx,
          stop.signal,
          (signal) =>
            ctx.client.campaign(
              ctx.format.key.parse(name, "NAME"),
              ctx.format.value.parse(value, "VALUE"),
              { ttl: ttlOption(ctx), signal },
            ),
          { held: "leading at revision", lost: "the leadership" },
          (won) => firstOf(stop.signal, won.lost).then(() => EXIT_OK),
          (won) => won.resign({ timeoutMs: DEFAULT_TIMEOUT_MS }),
        );
      } finally {
        stop.dispose();
        ctx.client.close();
      }
    },
  );
}

async function listen(ctx: EtcdContext, name: string, signal: AbortSignal): Promise<number> {
  const show = (kv: KeyValueRecord) =>
    ctx.json ? JSON.stringify(kvJson(ctx.format, kv)) : ctx.format.value.show(kv.value);
  for await (const kv of ctx.client.observe(ctx.format.key.parse(name, "NAME"), { signal })) {
    line(show(kv));
  }
  return EXIT_OK;
}
