/**
 * kill -9 loop through the server: a real `kv-engine serve` process (durable writes) is
 * under concurrent gRPC load - several clients each doing durable Put, Delete and atomic
 * multi-key Write calls, one after another, on their own keys, while another client runs
 * full scans - and is SIGKILLed at a random moment (some rounds right after it starts
 * listening, during the first writes), then restarted on the same directory.
 *
 * After each restart, per client: its keys hold exactly the state after all of its
 * acknowledged operations, or after those plus the one call that was in flight at the
 * kill (which may or may not have been applied). So every acknowledged write is present
 * with its last acknowledged value, and a batch is never half applied. Every round after
 * the first also continues on the state the previous one left.
 *
 * Default: 12 kills. KV_KILLS=<n> sets the count (KV_STRESS=1: 1000, about 15 minutes here). A failure prints the
 * seed; KV_SEED=<seed> replays the same operations (kill moments are real time).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KvClient, type Mutation } from "../../src/client/index.js";
import { verifyStore } from "../../src/tools/verify.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const KILLS = Number(process.env["KV_KILLS"] ?? (process.env["KV_STRESS"] ? 1000 : 12));
const WRITERS = 4;
const KEYS_PER_WRITER = 12;

type Model = Map<string, string>;
type Op = Mutation[];

const keyOf = (c: number, i: number) => `c${c}/k${String(i).padStart(2, "0")}`;

function applyOp(model: Model, op: Op): void {
  for (const m of op) {
    if (m.type === "put") model.set(String(m.key), String(m.value));
    else model.delete(String(m.key));
  }
}

function sameModel(a: Model, b: Model): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

function describe(m: Model): string {
  return [...m]
    .sort()
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

/** Client c's next operation: a put, a delete, or an atomic batch of 2-4 mutations. */
function nextOp(r: () => number, c: number, id: string): Op {
  const p = r();
  const key = () => keyOf(c, randInt(r, KEYS_PER_WRITER));
  if (p < 0.55) return [{ type: "put", key: key(), value: `${id}-${"v".repeat(randInt(r, 30))}` }];
  if (p < 0.7) return [{ type: "delete", key: key() }];
  const n = 2 + randInt(r, 3);
  const op: Op = [];
  for (let j = 0; j < n; j++) {
    op.push(
      r() < 0.8 ? { type: "put", key: key(), value: `${id}.${j}` } : { type: "delete", key: key() },
    );
  }
  return op;
}

async function readClientState(client: KvClient, c: number): Promise<Model> {
  const out: Model = new Map();
  for (const [k, v] of await client.scanAll(`c${c}/`, `c${c}0`))
    out.set(k.toString(), v.toString());
  return out;
}

test(`kill -9 of a serving process under concurrent gRPC load ${KILLS} times loses no acknowledged write and applies no batch by halves`, async (t) => {
  const dir = tempDir("kv-kill9-server-");
  t.after(dir.remove);
  const seed = testSeed();
  const r = rng(seed);
  const models: Model[] = Array.from({ length: WRITERS }, () => new Map());
  let acked = 0;
  let inFlightAtKill = 0;
  let inFlightApplied = 0;
  let scans = 0;
  /** Per client, the call in flight when the server was killed (maybe applied). */
  const pending: Array<Op | undefined> = Array.from({ length: WRITERS }, () => undefined);
  /**
   * After a restart: each client's keys hold its model, or its model plus its pending
   * call; the model becomes what is there.
   */
  const settle = async (client: KvClient, where: string) => {
    for (let c = 0; c < WRITERS; c++) {
      const actual = await readClientState(client, c);
      const op = pending[c];
      pending[c] = undefined;
      if (op !== undefined) inFlightAtKill++;
      if (sameModel(actual, models[c]!)) continue;
      const withPending = new Map(models[c]!);
      if (op !== undefined) applyOp(withPending, op);
      assert.ok(
        op !== undefined && sameModel(actual, withPending),
        `${where}: client ${c} after kill -9: neither its acknowledged state nor that plus its in-flight call ${JSON.stringify(op)}\n  acknowledged ${describe(models[c]!)}\n  actual       ${describe(actual)}`,
      );
      inFlightApplied++;
      models[c] = withPending;
    }
  };
  for (let round = 0; round < KILLS; round++) {
    const where = `seed ${seed} (KV_SEED=${seed}), round ${round}`;
    const server = await startServer(dir.path);
    const clients = Array.from(
      { length: WRITERS + 1 },
      () => new KvClient(server.address, { timeoutMs: 10_000 }),
    );
    try {
      await settle(clients[0]!, where);
      let stop = false;
      const writer = async (c: number) => {
        const cr = rng(seed * 31 + round * 101 + c);
        for (let i = 0; !stop; i++) {
          const op = nextOp(cr, c, `r${round}c${c}i${i}`);
          pending[c] = op;
          try {
            const client = clients[c]!;
            const only = op[0]!;
            if (op.length > 1 || cr() < 0.2) await client.write(op);
            else if (only.type === "put") await client.put(only.key, only.value);
            else await client.delete(only.key);
          } catch {
            return; // the server died: op stays pending (maybe applied)
          }
          applyOp(models[c]!, op);
          pending[c] = undefined;
          acked++;
        }
      };
      const scanner = async () => {
        while (!stop) {
          try {
            await clients[WRITERS]!.scanAll();
            scans++;
          } catch {
            return;
          }
        }
      };
      const load = Promise.all([
        ...Array.from({ length: WRITERS }, (_, c) => writer(c)),
        scanner(),
      ]);
      await new Promise((resolve) =>
        setTimeout(resolve, round % 5 === 4 ? 0 : 20 + randInt(r, 300)),
      );
      await server.stop("SIGKILL");
      await load;
      stop = true;
    } finally {
      for (const c of clients) c.close();
      await server.stop("SIGKILL");
    }
  }
  {
    const server = await startServer(dir.path);
    const client = new KvClient(server.address, { timeoutMs: 10_000 });
    try {
      await settle(client, `seed ${seed}, after the last kill`);
    } finally {
      client.close();
      await server.stop("SIGTERM");
    }
  }
  const report = await verifyStore(dir.path);
  assert.deepEqual(report.problems, [], "verify after the last round");
  t.diagnostic(
    `seed ${seed}: ${KILLS} kills, ${acked} acknowledged operations checked, ${inFlightAtKill} calls in flight at a kill (${inFlightApplied} applied), ${scans} scans, 0 acknowledged writes lost`,
  );
  assert.ok(acked > KILLS, `only ${acked} acknowledged operations`);
});
