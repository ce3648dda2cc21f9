import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import {
  isRequestError,
  type RequestErrorReason,
} from "../../../src/mvcc/requests/request-error.js";
import {
  validateDeleteRange,
  validatePut,
  validateRange,
  validateTxn,
} from "../../../src/mvcc/requests/validate.js";
import {
  RequestOpSchema,
  type TxnRequest,
} from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  b,
  cmp,
  delReq,
  opDel,
  opPut,
  opRange,
  opTxn,
  putReq,
  rangeReq,
  txnReq,
} from "./fixtures.js";

function refuses(fn: () => void, reason: RequestErrorReason): void {
  assert.throws(fn, (err) => isRequestError(err, reason), reason);
}

test("validate: a key is required; ignore_value with a value, ignore_lease with a lease", () => {
  refuses(() => validateRange(rangeReq({})), "EMPTY_KEY");
  refuses(() => validateRange(rangeReq({ rangeEnd: b("\0") })), "EMPTY_KEY");
  refuses(() => validatePut(putReq({ value: b("v") })), "EMPTY_KEY");
  refuses(() => validateDeleteRange(delReq({})), "EMPTY_KEY");
  refuses(
    () => validatePut(putReq({ key: b("k"), value: b("v"), ignoreValue: true })),
    "VALUE_PROVIDED",
  );
  refuses(
    () => validatePut(putReq({ key: b("k"), lease: 1n, ignoreLease: true })),
    "LEASE_PROVIDED",
  );
  validatePut(putReq({ key: b("k"), ignoreValue: true, ignoreLease: true }));
  validateRange(rangeReq({ key: b("\0"), rangeEnd: b("\0") }));
});

test("validate txn: compares and ops need keys; an empty op is KEY_NOT_FOUND", () => {
  refuses(() => validateTxn(txnReq({ compare: [cmp("", "version", "==", 0n)] })), "EMPTY_KEY");
  refuses(() => validateTxn(txnReq({ success: [opPut("")] })), "EMPTY_KEY");
  refuses(() => validateTxn(txnReq({ failure: [opTxn({ success: [opRange("")] })] })), "EMPTY_KEY");
  refuses(() => validateTxn(txnReq({ success: [create(RequestOpSchema)] })), "KEY_NOT_FOUND");
});

test("validate txn: at most maxTxnOps compares or ops per branch; nested txns get the rest", () => {
  const puts = (n: number) => Array.from({ length: n }, (_, i) => opPut(`k${i}`));
  validateTxn(txnReq({ success: puts(128), failure: puts(128) }));
  refuses(() => validateTxn(txnReq({ success: puts(129) })), "TOO_MANY_OPS");
  refuses(
    () =>
      validateTxn(
        txnReq({ compare: Array.from({ length: 129 }, () => cmp("a", "version", "==", 0n)) }),
      ),
    "TOO_MANY_OPS",
  );
  validateTxn(txnReq({ success: puts(3) }), 3);
  refuses(() => validateTxn(txnReq({ success: puts(4) }), 3), "TOO_MANY_OPS");
  // The parent uses 2 of 4: a nested txn may have 2, not 3.
  validateTxn(txnReq({ success: [opPut("a"), opTxn({ success: [opPut("b"), opPut("c")] })] }), 4);
  refuses(
    () =>
      validateTxn(
        txnReq({ success: [opPut("a"), opTxn({ success: [opPut("b"), opPut("c"), opPut("d")] })] }),
        4,
      ),
    "TOO_MANY_OPS",
  );
});

test("validate txn: etcd 3.4's duplicate-key rule", () => {
  const dup = (req: TxnRequest) => refuses(() => validateTxn(req), "DUPLICATE_KEY");
  const ok = (req: TxnRequest) => validateTxn(req);
  dup(txnReq({ success: [opPut("a"), opPut("a")] }));
  dup(txnReq({ failure: [opPut("a"), opPut("a")] }));
  dup(txnReq({ success: [opDel("a"), opPut("a")] }));
  dup(txnReq({ success: [opPut("b"), opDel("a", "c")] }));
  dup(txnReq({ success: [opPut("a"), opTxn({ success: [opPut("a")] })] }));
  dup(txnReq({ success: [opDel("a"), opTxn({ failure: [opPut("a")] })] }));
  dup(txnReq({ success: [opTxn({ success: [opDel("a", "z")] }), opPut("m")] }));
  dup(txnReq({ success: [opTxn({ success: [opDel("a")] }), opTxn({ success: [opPut("a")] })] }));
  dup(txnReq({ success: [opTxn({ success: [opPut("a")] }), opTxn({ failure: [opPut("a")] })] }));
  ok(txnReq({ success: [opPut("a")], failure: [opPut("a")] }));
  ok(txnReq({ success: [opTxn({ success: [opPut("a")], failure: [opPut("a")] })] }));
  ok(txnReq({ success: [opDel("a"), opDel("a", "z"), opPut("z")] }));
  ok(txnReq({ success: [opRange("a"), opPut("a"), opRange("a")] }));
  // A put before a delete in a later nested txn: etcd 3.4 checks only the other order.
  ok(txnReq({ success: [opTxn({ success: [opPut("a")] }), opTxn({ success: [opDel("a")] })] }));
  // A delete to "\0" conflicts with nothing (etcd 3.4's interval tree reads "\0" literally).
  ok(txnReq({ success: [opDel("a", "\0"), opPut("b")] }));
});
