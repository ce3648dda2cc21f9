/**
 * The text and JSON forms of a transaction for `kv-engine txn` (docs/tools.md, "txn"):
 * parsing them into EtcdClient's TxnBuilder. Every function throws a UsageError naming
 * the part that is wrong; nothing is sent until the whole transaction parsed.
 *
 * Text (one flag per compare or op):
 *   compare: TARGET(KEY) OP OPERAND    TARGET: value, version, create, mod or lease;
 *                                      OP: =, ==, !=, <, >; OPERAND: a number (lease: a hex
 *                                      ID) or, for value, the value
 *   op:      put KEY VALUE [lease=ID] | get KEY [prefix] | del KEY [prefix]
 * Words are separated by spaces; a word with spaces (or empty) is written as a JSON string
 * ("a b"). KEY and VALUE follow the command's byte options (--key-hex, --value-hex).
 *
 * JSON: {"if": [C...], "then": [O...], "else": [O...]} where C is a text compare or
 * {"key"|"keyHex", "target", "op", "value"|"valueHex"|"operand"} and O a text op or
 * {"put": {"key"|"keyHex", "value"|"valueHex", "lease"?}} | {"get": {"key"|"keyHex",
 * "prefix"?}} | {"del": {"key"|"keyHex", "prefix"?}}. JSON keys and values are text, or
 * hex in the *Hex fields, whatever the byte options.
 */
import type { CompareOperator, CompareTarget, TxnBuilder, TxnOp } from "../client/etcd/etcd-txn.js";
import { op } from "../client/etcd/etcd-txn.js";
import { fromHex, fromText } from "./byte-format.js";
import type { ByteFormats } from "./command.js";
import { UsageError } from "./command.js";
import { parseLeaseId } from "./etcd-command.js";

const TARGETS: readonly CompareTarget[] = ["value", "version", "create", "mod", "lease"];
const OPERATORS: readonly CompareOperator[] = ["=", "==", "!=", "<", ">"];

/** The words of `text`: runs of non-space characters, or JSON strings. */
export function words(text: string, what: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:("(?:[^"\\]|\\.)*")|(\S+))/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  for (;;) {
    m = re.exec(text);
    if (m === null) break;
    end = re.lastIndex;
    if (m[1] !== undefined) {
      try {
        out.push(JSON.parse(m[1]) as string);
      } catch {
        throw new UsageError(`${what}: bad quoted word ${m[1]}`);
      }
    } else if (m[2] !== undefined) {
      if (m[2].startsWith('"')) throw new UsageError(`${what}: unterminated quote in '${text}'`);
      out.push(m[2]);
    }
  }
  if (text.slice(end).trim() !== "")
    throw new UsageError(`${what}: cannot read '${text.slice(end)}'`);
  return out;
}

function integer(text: string, what: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new UsageError(`${what}: '${text}' is not a whole number >= 0`);
  return n;
}

/** Adds the compare `text` ("mod(k) = 5") to `txn`. */
export function addTextCompare(txn: TxnBuilder, text: string, f: ByteFormats): void {
  const what = `--if '${text}'`;
  const m = /^\s*([a-z]+)\((.*)\)\s*(==|!=|=|<|>)\s*(.*?)\s*$/s.exec(text);
  if (m === null) {
    throw new UsageError(`${what}: write TARGET(KEY) OP OPERAND, e.g. mod(k) = 5 or value(k) != v`);
  }
  const [, target, keyText, operator, operandText] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
  ];
  const keyWords = words(keyText, what);
  if (keyWords.length !== 1) throw new UsageError(`${what}: the key is one word (quote it: "a b")`);
  const operandWords = words(operandText, what);
  if (operandWords.length !== 1)
    throw new UsageError(`${what}: the operand is one word (quote it)`);
  addCompare(
    txn,
    target,
    f.key.parse(keyWords[0]!, `${what}: the key`),
    operator,
    target === "value" ? f.value.parse(operandWords[0]!, `${what}: the value`) : operandWords[0]!,
    what,
  );
}

function addCompare(
  txn: TxnBuilder,
  target: string,
  key: Uint8Array,
  operator: string,
  operand: Uint8Array | string | number,
  what: string,
): void {
  if (!TARGETS.includes(target as CompareTarget)) {
    throw new UsageError(`${what}: the target is one of ${TARGETS.join(", ")}, not '${target}'`);
  }
  if (!OPERATORS.includes(operator as CompareOperator)) {
    throw new UsageError(
      `${what}: the operator is one of ${OPERATORS.join(" ")}, not '${operator}'`,
    );
  }
  if (key.length === 0) throw new UsageError(`${what}: the key is empty`);
  let value: Uint8Array | number | bigint;
  if (target === "value") {
    if (!(operand instanceof Uint8Array))
      throw new UsageError(`${what}: value compares with a value`);
    value = operand;
  } else if (target === "lease") {
    value = parseLeaseId(String(operand), `${what}: the lease`);
  } else {
    value = typeof operand === "number" ? operand : integer(String(operand), what);
  }
  txn.if(key, target as CompareTarget, operator as CompareOperator, value);
}

/** The op `text` ("put k v"). */
export function textOp(text: string, f: ByteFormats, what: string): TxnOp {
  const w = words(text, `${what} '${text}'`);
  const [verb, key, ...rest] = w;
  const where = `${what} '${text}'`;
  if (key === undefined)
    throw new UsageError(`${where}: write put KEY VALUE, get KEY [prefix] or del KEY [prefix]`);
  const k = f.key.parse(key, `${where}: the key`);
  if (verb === "put") {
    const [value, ...more] = rest;
    if (value === undefined) throw new UsageError(`${where}: put needs KEY and VALUE`);
    const lease =
      more.length === 1 && more[0]!.startsWith("lease=") ? more[0]!.slice(6) : undefined;
    if (more.length > 0 && lease === undefined)
      throw new UsageError(`${where}: after put KEY VALUE only lease=ID`);
    return putOp(k, f.value.parse(value, `${where}: the value`), lease, where);
  }
  if (verb === "get" || verb === "del") {
    if (rest.length > 1 || (rest.length === 1 && rest[0] !== "prefix")) {
      throw new UsageError(`${where}: after ${verb} KEY only the word prefix`);
    }
    return rangeOp(verb, k, rest.length === 1, where);
  }
  throw new UsageError(`${where}: an op is put, get or del, not '${verb}'`);
}

function putOp(
  key: Uint8Array,
  value: Uint8Array,
  lease: string | undefined,
  where: string,
): TxnOp {
  if (key.length === 0) throw new UsageError(`${where}: the key is empty`);
  return op.put(
    key,
    value,
    lease === undefined ? {} : { lease: parseLeaseId(lease, `${where}: lease`) },
  );
}

function rangeOp(verb: "get" | "del", key: Uint8Array, prefix: boolean, where: string): TxnOp {
  if (key.length === 0 && !prefix) throw new UsageError(`${where}: the key is empty`);
  const selector = prefix ? { prefix: key } : key;
  return verb === "get" ? op.get(selector) : op.delete(selector);
}

/** Bytes of JSON field `name` (text) or `nameHex` (hex) of `o`. */
function jsonBytes(o: Record<string, unknown>, name: string, what: string): Uint8Array | undefined {
  const text = o[name];
  const hex = o[`${name}Hex`];
  if (typeof text === "string") return fromText(text, `${what}.${name}`, `${name}Hex`);
  if (typeof hex === "string") {
    try {
      return fromHex(hex, `${what}.${name}Hex`);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function jsonOp(v: unknown, f: ByteFormats, what: string): TxnOp {
  if (typeof v === "string") return textOp(v, f, what);
  if (!isObject(v) || Object.keys(v).length !== 1) {
    throw new UsageError(
      `${what}: an op is {"put": {...}}, {"get": {...}}, {"del": {...}} or text`,
    );
  }
  const [verb, body] = Object.entries(v)[0]!;
  const where = `${what}.${verb}`;
  if (!isObject(body)) throw new UsageError(`${where}: expected an object`);
  const key = jsonBytes(body, "key", where);
  if (key === undefined) throw new UsageError(`${where}: needs "key" or "keyHex"`);
  if (verb === "put") {
    const value = jsonBytes(body, "value", where);
    if (value === undefined) throw new UsageError(`${where}: needs "value" or "valueHex"`);
    const lease = body.lease;
    if (lease !== undefined && typeof lease !== "string")
      throw new UsageError(`${where}.lease: a hex ID string`);
    return putOp(key, value, lease, where);
  }
  if (verb === "get" || verb === "del") return rangeOp(verb, key, body.prefix === true, where);
  throw new UsageError(`${what}: an op is put, get or del, not '${verb}'`);
}

/** Fills `txn` from the JSON document `text` (see the module comment). */
export function fillFromJson(txn: TxnBuilder, text: string, f: ByteFormats): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`stdin is not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc))
    throw new UsageError('stdin: expected {"if": [...], "then": [...], "else": [...]}');
  for (const name of Object.keys(doc)) {
    if (!["if", "then", "else"].includes(name))
      throw new UsageError(`stdin: unknown field '${name}' (if, then, else)`);
  }
  const list = (name: string): unknown[] => {
    const v = doc[name] ?? [];
    if (!Array.isArray(v)) throw new UsageError(`stdin: "${name}" must be an array`);
    return v;
  };
  for (const [i, c] of list("if").entries()) {
    const what = `stdin if[${i}]`;
    if (typeof c === "string") {
      addTextCompare(txn, c, f);
      continue;
    }
    if (!isObject(c)) throw new UsageError(`${what}: a compare is text or an object`);
    const key = jsonBytes(c, "key", what);
    if (key === undefined) throw new UsageError(`${what}: needs "key" or "keyHex"`);
    const operand =
      c.target === "value"
        ? jsonBytes(c, "value", what)
        : typeof c.operand === "number" || typeof c.operand === "string"
          ? c.operand
          : undefined;
    if (operand === undefined) {
      throw new UsageError(`${what}: needs "value"/"valueHex" (target value) or "operand"`);
    }
    addCompare(txn, String(c.target), key, String(c.op ?? "="), operand, what);
  }
  txn.success(...list("then").map((o, i) => jsonOp(o, f, `stdin then[${i}]`)));
  txn.failure(...list("else").map((o, i) => jsonOp(o, f, `stdin else[${i}]`)));
}
