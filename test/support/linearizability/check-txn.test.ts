import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { randInt, rng, testSeed } from "../random.js";
import { answer, checkTxnLinearizability, type TxnOperation } from "./check-txn.js";
import {
  EMPTY_TXN_STATE,
  type TxnInput,
  type TxnOpResult,
  type TxnOutput,
  type TxnState,
} from "./txn-model.js";

const INF = Number.POSITIVE_INFINITY;

const get = (key: string): TxnInput => ({
  compares: [],
  success: [{ type: "range", key }],
  failure: [],
});
const put = (key: string, value: string): TxnInput => ({
  compares: [],
  success: [{ type: "put", key, value }],
  failure: [],
});
/** Kubernetes' create: iff the key's mod revision is 0, put it; else read it. */
const create = (key: string, value: string): TxnInput => ({
  compares: [{ key, target: "mod", op: "==", value: 0 }],
  success: [{ type: "put", key, value }],
  failure: [{ type: "range", key }],
});

function op(
  client: number,
  input: TxnInput,
  output: TxnOutput | undefined,
  call: number,
  ret: number,
): TxnOperation {
  return { client, input, output, call, return: output === undefined ? INF : ret };
}

/** The answers a correct store gives to `inputs` run in this order from the empty store. */
function sequential(inputs: readonly TxnInput[]): TxnOutput[] {
  let s: TxnState = EMPTY_TXN_STATE;
  return inputs.map((i) => {
    const r = answer(s, i);
    s = r.state;
    return r.output;
  });
}

describe("checkTxnLinearizability", () => {
  test("a sequential history answered by the model is linearizable, and a changed revision is not", () => {
    const inputs = [put("a", "1"), get("a"), create("a", "2"), create("b", "3"), get("b")];
    const outs = sequential(inputs);
    assert.equal(outs[0]!.revision, 2, "a fresh store is at revision 1, its first write 2");
    const h = inputs.map((i, n) => op(0, i, outs[n], n * 10, n * 10 + 5));
    assert.equal(checkTxnLinearizability(h).verdict, "ok");
    const bad = h.slice();
    bad[1] = { ...bad[1]!, output: { ...outs[1]!, revision: 3 } };
    const r = checkTxnLinearizability(bad);
    assert.equal(r.verdict, "violation");
    assert.match(r.explanation!, /#1 client 0 range "a"/);
  });

  test("two creates of one key that both succeed are a lost update", () => {
    const [a, b] = [create("k", "x"), create("k", "y")];
    const both: TxnOutput = { revision: 2, succeeded: true, results: [{ type: "put" }] };
    const h = [op(1, a, both, 0, 10), op(2, b, { ...both, revision: 3 }, 0, 10)];
    assert.equal(checkTxnLinearizability(h).verdict, "violation");
    // The second seeing the first (failed, reading it) is fine.
    const seen: TxnOutput = {
      revision: 2,
      succeeded: false,
      results: [
        {
          type: "range",
          kvs: [{ key: "k", value: "x", createRevision: 2, modRevision: 2, version: 1 }],
        },
      ],
    };
    assert.equal(
      checkTxnLinearizability([op(1, a, both, 0, 10), op(2, b, seen, 0, 10)]).verdict,
      "ok",
    );
  });

  test("a read after a write returned must see it: a stale read is a violation", () => {
    const outs = sequential([put("a", "1"), put("a", "2")]);
    const stale: TxnOutput = {
      revision: 2,
      succeeded: true,
      results: [
        {
          type: "range",
          kvs: [{ key: "a", value: "1", createRevision: 2, modRevision: 2, version: 1 }],
        },
      ],
    };
    const h = [
      op(0, put("a", "1"), outs[0], 0, 5),
      op(0, put("a", "2"), outs[1], 10, 15),
      op(1, get("a"), stale, 20, 25),
    ];
    assert.equal(checkTxnLinearizability(h).verdict, "violation");
    // Concurrent with the second put, the same read is fine.
    h[2] = op(1, get("a"), stale, 12, 25);
    assert.equal(checkTxnLinearizability(h).verdict, "ok");
  });

  test("a write of unknown outcome may take effect (seen by a later read) or not", () => {
    const outs = sequential([put("a", "1"), get("a")]);
    const h = [op(0, put("a", "1"), undefined, 0, INF), op(1, get("a"), outs[1], 10, 15)];
    assert.equal(checkTxnLinearizability(h).verdict, "ok");
    const empty = sequential([get("a")]);
    h[1] = op(1, get("a"), empty[0], 10, 15);
    assert.equal(checkTxnLinearizability(h).verdict, "ok");
  });

  test("random concurrent histories answered in some order are linearizable; a wrong version is caught", () => {
    const seed = testSeed();
    const random = rng(seed);
    const keys = ["a", "b", "c"];
    for (let round = 0; round < 30; round++) {
      const inputs: TxnInput[] = [];
      for (let i = 0; i < 24; i++) {
        const k = keys[randInt(random, keys.length)]!;
        const k2 = keys[randInt(random, keys.length)]!;
        const kind = randInt(random, 5);
        if (kind === 0) inputs.push(get(k));
        else if (kind === 1) inputs.push(put(k, `v${i}`));
        else if (kind === 2) inputs.push(create(k, `c${i}`));
        else if (kind === 3)
          inputs.push({
            compares: [],
            success: [{ type: "delete", key: "a", end: "\0" }],
            failure: [],
          });
        else
          inputs.push({
            compares: [{ key: k, target: "version", op: ">", value: randInt(random, 3) }],
            success: [
              { type: "put", key: k2, value: `t${i}` },
              { type: "range", key: "a", end: "d" },
            ],
            failure: [{ type: "range", key: k }],
          });
      }
      const outs = sequential(inputs);
      // Linearization point i*10; each interval stretches around it by up to 25.
      const h = inputs.map((input, i) => {
        const at = i * 10;
        return op(
          randInt(random, 4),
          input,
          outs[i],
          at - randInt(random, 25),
          at + randInt(random, 25),
        );
      });
      const r = checkTxnLinearizability(h);
      assert.equal(r.verdict, "ok", `seed ${seed} round ${round}: ${r.explanation ?? ""}`);
      // A read answering a version no order can produce.
      const readAt = outs.findIndex(
        (o) => o.results[0]?.type === "range" && o.results[0].kvs.length > 0,
      );
      if (readAt < 0) continue;
      const o = outs[readAt]!;
      const first = o.results[0] as Extract<TxnOpResult, { type: "range" }>;
      const wrong: TxnOutput = {
        ...o,
        results: [
          { type: "range", kvs: first.kvs.map((kv) => ({ ...kv, version: kv.version + 100 })) },
          ...o.results.slice(1),
        ],
      };
      const bad = h.slice();
      bad[readAt] = { ...bad[readAt]!, output: wrong };
      assert.equal(
        checkTxnLinearizability(bad).verdict,
        "violation",
        `seed ${seed} round ${round}`,
      );
    }
  });
});
