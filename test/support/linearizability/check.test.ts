import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { randInt, rng, testSeed } from "../random.js";
import {
  checkLinearizability,
  HistoryRecorder,
  ILLEGAL,
  type KvInput,
  type KvOperation,
  type KvOutput,
  type KvState,
  kvStep,
} from "./index.js";

const INF = Number.POSITIVE_INFINITY;

function op(
  client: number,
  input: KvInput,
  output: KvOutput | undefined,
  call: number,
  ret: number = INF,
  key = "k",
): KvOperation {
  return { client, key, input, output, call, return: output === undefined ? INF : ret };
}
const put = (value: string): KvInput => ({ type: "put", value });
const get: KvInput = { type: "get" };
const del: KvInput = { type: "delete" };
const cas = (expected: string | undefined, next: string | undefined): KvInput => ({
  type: "cas",
  expected,
  next,
});
const ok = (input: KvInput): KvOutput =>
  input.type === "put" ? { type: "put" } : { type: "delete" };
const got = (value: string | undefined): KvOutput => ({ type: "get", value });
const casOut = (applied: boolean, current: string | undefined): KvOutput => ({
  type: "cas",
  applied,
  current,
});

function verdict(history: KvOperation[]): string {
  return checkLinearizability(history).verdict;
}

/** Reference: tries every order the real-time constraints allow (tiny histories only). */
function bruteForce(history: readonly KvOperation[]): boolean {
  const remaining = new Set(history.map((_, i) => i));
  const states = new Map<string, KvState>();
  const visit = (): boolean => {
    let knownLeft = false;
    for (const i of remaining) if (history[i]!.output !== undefined) knownLeft = true;
    if (!knownLeft) return true;
    for (const i of [...remaining]) {
      const a = history[i]!;
      let blocked = false;
      for (const j of remaining) {
        if (j !== i && history[j]!.return < a.call) blocked = true;
      }
      if (blocked) continue;
      const before = states.get(a.key);
      const after = kvStep(before, a.input, a.output);
      if (after === ILLEGAL) continue;
      remaining.delete(i);
      states.set(a.key, after);
      const found = visit();
      remaining.add(i);
      states.set(a.key, before);
      if (found) return true;
    }
    return false;
  };
  return visit();
}

interface GenOptions {
  ops: number;
  keys: number;
  clients: number;
  /** How far an operation's interval may reach on each side of its effect. */
  spread: number;
  /** Share of writes whose outcome is recorded as unknown. */
  unknownShare: number;
}

/**
 * A history that is linearizable by construction: a sequential register per key executes
 * the operations at times 10, 20, 30, ...; each operation's interval is drawn around its
 * point of effect. An unknown write either took effect at its point or never did.
 */
function sequentialHistory(seed: number, o: GenOptions): KvOperation[] {
  const r = rng(seed);
  const states = new Map<string, KvState>();
  const history: KvOperation[] = [];
  const value = (): string => `v${randInt(r, 1_000_000)}`;
  for (let i = 0; i < o.ops; i++) {
    const key = `key${randInt(r, o.keys)}`;
    const state = states.get(key);
    const kind = randInt(r, 10);
    let input: KvInput;
    if (kind < 4) input = get;
    else if (kind < 7) input = put(value());
    else if (kind < 8) input = del;
    else {
      const expected = r() < 0.6 ? state : r() < 0.5 ? undefined : value();
      input = cas(expected, r() < 0.9 ? value() : undefined);
    }
    const t = 10 * (i + 1);
    const call = t - randInt(r, o.spread + 1);
    const ret = t + randInt(r, o.spread + 1);
    const client = randInt(r, o.clients);
    const unknown = input.type !== "get" && r() < o.unknownShare;
    if (unknown && r() < 0.5) {
      history.push({ client, key, input, output: undefined, call, return: INF });
      continue; // never took effect
    }
    const after = kvStep(state, input, undefined) as KvState;
    states.set(key, after);
    let output: KvOutput;
    if (input.type === "get") output = got(state);
    else if (input.type === "cas") output = casOut(state === input.expected, after);
    else output = ok(input);
    if (unknown) history.push({ client, key, input, output: undefined, call, return: INF });
    else history.push({ client, key, input, output, call, return: ret });
  }
  return history;
}

describe("linearizability checker", () => {
  test("a stale read is rejected, and the explanation names the key and the read", () => {
    const history = [
      op(1, put("a"), ok(put("a")), 0, 1),
      op(1, put("b"), ok(put("b")), 2, 3),
      op(2, get, got("a"), 4, 5),
    ];
    const result = checkLinearizability(history);
    assert.equal(result.verdict, "violation");
    assert.equal(result.violation?.key, "k");
    assert.match(result.violation!.explanation, /#2 client 2 get: "a" \[4, 5\]/);
    assert.match(result.violation!.explanation, /leaving the value "b"/);
    assert.ok(result.violation!.operations.some(([p]) => p === 2));
  });

  test("a read concurrent with a write may see either value", () => {
    const write = op(1, put("b"), ok(put("b")), 2, 10);
    const first = op(1, put("a"), ok(put("a")), 0, 1);
    assert.equal(verdict([first, write, op(2, get, got("a"), 3, 4)]), "ok");
    assert.equal(verdict([first, write, op(2, get, got("b"), 3, 4)]), "ok");
    // ...but not the old value once another read saw the new one and returned.
    assert.equal(
      verdict([first, write, op(2, get, got("b"), 3, 4), op(3, get, got("a"), 5, 6)]),
      "violation",
    );
  });

  test("a lost write is rejected", () => {
    const history = [op(1, put("a"), ok(put("a")), 0, 1), op(2, get, got(undefined), 2, 3)];
    assert.equal(verdict(history), "violation");
  });

  test("a read of a value never written is rejected", () => {
    assert.equal(verdict([op(1, get, got("ghost"), 0, 1)]), "violation");
    const history = [op(1, put("a"), ok(put("a")), 0, 1), op(2, get, got("ghost"), 0, 5)];
    assert.equal(verdict(history), "violation");
  });

  test("a CAS that applies but reports not applied is rejected", () => {
    // It said "not applied", yet its new value shows up afterwards.
    const history = [
      op(1, put("a"), ok(put("a")), 0, 1),
      op(2, cas("a", "b"), casOut(false, "c"), 2, 3),
      op(3, get, got("b"), 4, 5),
    ];
    assert.equal(verdict(history), "violation");
    // It said "not applied" while the value it compared against was there.
    assert.equal(
      verdict([
        op(1, put("a"), ok(put("a")), 0, 1),
        op(2, cas("a", "b"), casOut(false, "a"), 2, 3),
      ]),
      "violation",
    );
    // Its flag contradicts the comparison although its "current" value fits either way.
    assert.equal(
      verdict([
        op(1, put("a"), ok(put("a")), 0, 1),
        op(2, cas("a", "a"), casOut(false, "a"), 2, 3),
      ]),
      "violation",
    );
    assert.equal(
      verdict([op(1, put("b"), ok(put("b")), 0, 1), op(2, cas("a", "b"), casOut(true, "b"), 2, 3)]),
      "violation",
    );
    // The honest answers pass.
    assert.equal(
      verdict([op(1, put("a"), ok(put("a")), 0, 1), op(2, cas("a", "b"), casOut(true, "b"), 2, 3)]),
      "ok",
    );
    assert.equal(
      verdict([
        op(1, put("c"), ok(put("c")), 0, 1),
        op(2, cas("a", "b"), casOut(false, "c"), 2, 3),
      ]),
      "ok",
    );
  });

  test("a CAS on absence and a CAS to deletion follow the register", () => {
    const history = [
      op(1, cas(undefined, "a"), casOut(true, "a"), 0, 1),
      op(1, cas(undefined, "b"), casOut(false, "a"), 2, 3),
      op(1, cas("a", undefined), casOut(true, undefined), 4, 5),
      op(2, get, got(undefined), 6, 7),
    ];
    assert.equal(verdict(history), "ok");
    assert.equal(
      verdict([op(1, cas(undefined, "a"), casOut(false, undefined), 0, 1)]),
      "violation",
    );
  });

  test("a timed-out write may or may not take effect, but not both", () => {
    const lost = op(1, put("a"), undefined, 0);
    assert.equal(verdict([lost, op(2, get, got("a"), 10, 11)]), "ok");
    assert.equal(verdict([lost, op(2, get, got(undefined), 10, 11)]), "ok");
    // It may take effect long after it timed out...
    assert.equal(
      verdict([lost, op(2, get, got(undefined), 10, 11), op(2, get, got("a"), 20, 21)]),
      "ok",
    );
    // ...but once seen, it cannot be unseen without another write.
    assert.equal(
      verdict([lost, op(2, get, got("a"), 10, 11), op(2, get, got(undefined), 20, 21)]),
      "violation",
    );
    // Nor can it take effect before it was invoked.
    assert.equal(verdict([op(2, get, got("a"), 0, 1), op(1, put("a"), undefined, 5)]), "violation");
  });

  test("a read whose outcome is unknown constrains nothing", () => {
    const history = [op(1, put("a"), ok(put("a")), 0, 1), op(2, get, undefined, 2)];
    assert.equal(verdict(history), "ok");
  });

  test("keys are independent: a violation on one key is reported with that key", () => {
    const history = [
      op(1, put("a"), ok(put("a")), 0, 1, "x"),
      op(2, get, got("a"), 2, 3, "y"),
      op(2, get, got("a"), 2, 3, "x"),
    ];
    const result = checkLinearizability(history);
    assert.equal(result.verdict, "violation");
    assert.equal(result.violation?.key, "y");
    assert.equal(result.keys, 2);
  });

  test("random tiny histories get the same verdict as an exhaustive search", () => {
    const seed = testSeed();
    const r = rng(seed);
    const counts = { ok: 0, violation: 0 };
    for (let h = 0; h < 3000; h++) {
      const n = 1 + randInt(r, 7);
      const history: KvOperation[] = [];
      const values = ["a", "b", undefined];
      const pick = (): string | undefined => values[randInt(r, values.length)];
      for (let i = 0; i < n; i++) {
        const call = randInt(r, 12);
        const ret = call + randInt(r, 6);
        const key = r() < 0.7 ? "x" : "y";
        const kind = randInt(r, 4);
        let input: KvInput;
        let output: KvOutput;
        if (kind === 0) {
          input = get;
          output = got(pick());
        } else if (kind === 1) {
          const v = pick();
          input = v === undefined ? del : put(v);
          output = ok(input);
        } else {
          const next = pick();
          input = cas(pick(), next);
          const applied = r() < 0.5;
          output = casOut(applied, applied ? next : pick());
        }
        const unknown = r() < 0.15;
        history.push({
          client: i,
          key,
          input,
          output: unknown ? undefined : output,
          call,
          return: unknown ? INF : ret,
        });
      }
      const expected = bruteForce(history) ? "ok" : "violation";
      const actual = checkLinearizability(history).verdict;
      assert.equal(actual, expected, `seed ${seed}, history ${h}: ${JSON.stringify(history)}`);
      counts[expected]++;
    }
    // Both verdicts were exercised, in earnest.
    assert.ok(counts.ok > 300 && counts.violation > 300, JSON.stringify(counts));
  });

  test("histories of a sequential register with random overlap pass", () => {
    const seed = testSeed();
    for (let i = 0; i < 40; i++) {
      const s = seed + i;
      const history = sequentialHistory(s, {
        ops: 300,
        keys: 1 + (i % 4),
        clients: 5,
        spread: 5 + (i % 5) * 10,
        unknownShare: 0,
      });
      const result = checkLinearizability(history);
      assert.equal(result.verdict, "ok", `seed ${s}: ${result.violation?.explanation ?? ""}`);
    }
  });

  test("histories with timed-out writes pass whether or not those writes took effect", () => {
    const seed = testSeed();
    for (let i = 0; i < 40; i++) {
      const s = seed + i;
      const history = sequentialHistory(s, {
        ops: 300,
        keys: 2,
        clients: 5,
        spread: 25,
        unknownShare: 0.2,
      });
      assert.ok(history.some((o) => o.output === undefined));
      const result = checkLinearizability(history);
      assert.equal(result.verdict, "ok", `seed ${s}: ${result.violation?.explanation ?? ""}`);
    }
  });

  test("a generated history with one read changed to an unwritten value is rejected", () => {
    const seed = testSeed();
    for (let i = 0; i < 40; i++) {
      const s = seed + i;
      const history = sequentialHistory(s, {
        ops: 200,
        keys: 3,
        clients: 5,
        spread: 25,
        unknownShare: 0.1,
      });
      const reads = history.flatMap((o, p) => (o.input.type === "get" && o.output ? [p] : []));
      const p = reads[randInt(rng(s), reads.length)]!;
      history[p] = { ...history[p]!, output: got("never-written") };
      const result = checkLinearizability(history);
      assert.equal(result.verdict, "violation", `seed ${s}`);
      assert.equal(result.violation?.key, history[p]!.key, `seed ${s}`);
    }
  });

  test("a few thousand operations over several keys check within a modest step budget", (t) => {
    const seed = testSeed();
    const history = sequentialHistory(seed, {
      ops: 4000,
      keys: 8,
      clients: 16,
      spread: 40,
      unknownShare: 0.05,
    });
    const started = performance.now();
    const result = checkLinearizability(history, { maxSteps: 2_000_000 });
    const ms = performance.now() - started;
    assert.equal(result.verdict, "ok", `seed ${seed}`);
    assert.equal(result.operations, 4000);
    t.diagnostic(`4000 operations, ${result.steps} steps, ${ms.toFixed(0)} ms`);
  });

  test("the search stops at its budget and says unknown instead of hanging", () => {
    // Many concurrent writes and reads, then a read of a value never written: every
    // order of the concurrent part must be tried before the verdict, far beyond the budget.
    const history: KvOperation[] = [];
    for (let i = 0; i < 40; i++) history.push(op(i, put(`v${i}`), ok(put(`v${i}`)), 0, 100));
    for (let i = 0; i < 40; i++) history.push(op(i, get, got(`v${i % 7}`), 1, 99));
    history.push(op(99, get, got("ghost"), 101, 102));
    const result = checkLinearizability(history, { maxSteps: 50_000 });
    assert.equal(result.verdict, "unknown");
    assert.deepEqual(result.undecidedKeys, ["k"]);
    assert.ok(result.steps <= 50_000 + 1024);
    const timed = checkLinearizability(history, { timeoutMs: 50 });
    assert.equal(timed.verdict, "unknown");
  });

  test("a malformed operation is refused with a clear error", () => {
    assert.throws(
      () => checkLinearizability([op(1, put("a"), ok(put("a")), 5, 4)]),
      /return time 4 is before call time 5/,
    );
    assert.throws(
      () => checkLinearizability([{ ...op(1, get, undefined, 0), return: 3 }]),
      /unknown outcome must have return time Infinity/,
    );
    assert.throws(
      () => checkLinearizability([op(1, get, ok(put("a")), 0, 1)]),
      /output type put answers input type get/,
    );
  });
});

describe("HistoryRecorder", () => {
  test("records invocations, answers, unknown outcomes and certain failures", () => {
    let now = 0;
    const recorder = new HistoryRecorder(() => now);
    const a = recorder.invoke(1, "k", put("a"));
    const b = recorder.invoke(2, "k", put("b"));
    const c = recorder.invoke(3, "k", get);
    const d = recorder.invoke(4, "k", put("d"));
    now = 5;
    recorder.complete(a, ok(put("a")));
    recorder.unknown(b);
    recorder.failed(c);
    assert.throws(() => recorder.complete(a, ok(put("a"))), /already done/);
    const ops = recorder.operations();
    assert.equal(ops.length, 3);
    assert.deepEqual(ops[0], op(1, put("a"), ok(put("a")), 0, 5));
    assert.deepEqual(ops[1], op(2, put("b"), undefined, 0));
    assert.deepEqual(ops[2], op(4, put("d"), undefined, 0)); // still open: unknown
    assert.equal(recorder.size, 4);
    void d;
  });
});
