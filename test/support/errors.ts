/** Assertions on KvErrors: the code, and what the message and `file` must say. */
import assert from "node:assert/strict";
import { type ErrorCode, isKvError, type KvError } from "../../src/errors.js";

export interface KvErrorExpectation {
  /** A pattern the message must match. */
  message?: RegExp;
  /** The file the error must name in its `file` field. */
  file?: string;
}

/** Asserts `err` is a KvError with `code` (and what `expected` says); returns it. */
export function assertKvError(
  err: unknown,
  code: ErrorCode,
  expected: KvErrorExpectation = {},
  what = "",
): KvError {
  const where = what === "" ? "" : `${what}: `;
  assert.ok(isKvError(err, code), `${where}expected a KvError ${code}, got ${String(err)}`);
  if (expected.message !== undefined) assert.match(err.message, expected.message, where);
  if (expected.file !== undefined) assert.equal(err.file, expected.file, `${where}file`);
  return err;
}

/** Asserts `promise` rejects with a KvError with `code`; returns the error. */
export async function rejectsWithCode(
  promise: Promise<unknown>,
  code: ErrorCode,
  expected: KvErrorExpectation = {},
  what = "",
): Promise<KvError> {
  let error: unknown;
  await assert.rejects(promise, (err) => {
    error = err;
    return true;
  });
  return assertKvError(error, code, expected, what);
}

/** Asserts `fn` throws a KvError with `code`; returns the error. */
export function throwsWithCode(
  fn: () => unknown,
  code: ErrorCode,
  expected: KvErrorExpectation = {},
  what = "",
): KvError {
  let error: unknown;
  assert.throws(fn, (err) => {
    error = err;
    return true;
  });
  return assertKvError(error, code, expected, what);
}
