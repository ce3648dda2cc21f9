import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkRevisionReads, type RevisionRead } from "./check-revision-reads.js";
import { answer, type TxnOperation } from "./check-txn.js";
import { EMPTY_TXN_STATE, type TxnInput, type TxnKv, type TxnState } from "./txn-model.js";

const KEYS = ["a", "b", "c"];
const put = (key: string, value: string): TxnInput => ({
  compares: [],
  success: [{ type: "put", key, value }],
  failure: [],
});
const all: TxnInput = {
  compares: [],
  success: [{ type: "range", key: "a", end: "d" }],
  failure: [],
};

/** A sequential history of `inputs` (op n at [10n, 10n+5]) and the state after each revision. */
function run(inputs: readonly TxnInput[]): {
  history: TxnOperation[];
  at: Map<number, TxnState>;
} {
  let s = EMPTY_TXN_STATE;
  const at = new Map<number, TxnState>([[s.revision, s]]);
  const history = inputs.map((input, n) => {
    const r = answer(s, input);
    s = r.state;
    at.set(s.revision, s);
    return { client: 0, input, output: r.output, call: n * 10, return: n * 10 + 5 };
  });
  return { history, at };
}

function kvsAt(state: TxnState, keys: readonly string[]): TxnKv[] {
  return keys.filter((k) => state.kvs.has(k)).map((k) => ({ key: k, ...state.kvs.get(k)! }));
}

const read = (
  revision: number,
  answer: RevisionRead["answer"],
  key = "a",
  end: string | undefined = "d",
  call = 1000,
): RevisionRead => ({ client: 1, key, end, revision, call, return: call + 5, answer });

describe("checkRevisionReads", () => {
  const { history, at } = run([put("a", "1"), put("b", "2"), all, put("a", "3"), all]);

  test("reads answering the store as it was at each revision agree with the history", () => {
    const reads = [...at].map(([r, s]) => read(r, kvsAt(s, KEYS)));
    reads.push(read(3, kvsAt(at.get(3)!, ["b"]), "b", undefined));
    assert.deepEqual(checkRevisionReads(history, reads, [], KEYS), []);
  });

  test("a read at an old revision answering the newest value is caught", () => {
    const wrong = read(3, kvsAt(at.get(4)!, KEYS));
    const v = checkRevisionReads(history, [wrong], [], KEYS);
    assert.equal(v.length, 2, v.join("\n")); // past the revision, and a's value
    assert.match(v.join("\n"), /key "a" at revision 3: value "1"/);
  });

  test("a wrong version, or a key missing at a revision nothing else pins, is caught", () => {
    const kvs = kvsAt(at.get(3)!, ["b"]).map((kv) => ({ ...kv, version: kv.version + 1 }));
    assert.match(
      checkRevisionReads(history, [read(3, kvs, "b", undefined)], [], KEYS).join("\n"),
      /key "b" at revision 3: value "2" create 3 mod 3 version 1 .*version 2/,
    );
    // At revision 2 only the put pins "a" (not its version); "b" is absent there.
    const missing = kvsAt(at.get(3)!, ["a"]);
    assert.deepEqual(checkRevisionReads(history, [read(2, missing)], [], KEYS), []);
    const extra = kvsAt(at.get(3)!, ["a", "b"]);
    assert.match(
      checkRevisionReads(history, [read(2, extra)], [], KEYS).join("\n"),
      /past the revision/,
    );
    // Revision 1 (the empty store) is pinned by no answer: two reads of it must agree.
    const one = read(1, []);
    const other = read(1, [
      { key: "c", value: "x", createRevision: 1, modRevision: 1, version: 1 },
    ]);
    assert.deepEqual(checkRevisionReads(history, [one], [], KEYS), []);
    assert.equal(checkRevisionReads(history, [one, other], [], KEYS).length, 1);
  });

  test("compacted: only after a compaction above the revision was asked; answered: not after one was acknowledged", () => {
    const compacted = read(2, "compacted", "a", "d", 100);
    assert.equal(checkRevisionReads(history, [compacted], [], KEYS).length, 1);
    const below = { revision: 2, call: 50, return: 60, acknowledged: true };
    assert.equal(checkRevisionReads(history, [compacted], [below], KEYS).length, 1);
    const above = { revision: 3, call: 102, return: Number.POSITIVE_INFINITY, acknowledged: false };
    assert.deepEqual(checkRevisionReads(history, [compacted], [above], KEYS), []);
    const answered = read(2, kvsAt(at.get(2)!, KEYS), "a", "d", 100);
    assert.deepEqual(checkRevisionReads(history, [answered], [above], KEYS), []);
    const acked = { revision: 3, call: 80, return: 90, acknowledged: true };
    assert.match(
      checkRevisionReads(history, [answered], [acked], KEYS).join("\n"),
      /after a compaction to 3 was acknowledged/,
    );
  });
});
