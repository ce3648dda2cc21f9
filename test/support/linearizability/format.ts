/** Legible one-line forms of operations and values, for failure messages. */
import type { KvState } from "./kv-model.js";
import type { KvOperation } from "./operation.js";

const MAX_VALUE_CHARS = 40;

/** A value as printed: quoted, shortened if long; "absent" for undefined. */
export function formatValue(value: KvState): string {
  if (value === undefined) return "absent";
  const shown = value.length > MAX_VALUE_CHARS ? `${value.slice(0, MAX_VALUE_CHARS)}...` : value;
  return JSON.stringify(shown);
}

function formatTime(t: number): string {
  return t === Number.POSITIVE_INFINITY ? "inf" : String(t);
}

/** E.g. `#12 client 3 cas "a" -> "b": applied (now "b") [105, 130]`. */
export function formatOperation(op: KvOperation, position: number): string {
  const input = op.input;
  let call: string;
  switch (input.type) {
    case "get":
      call = "get";
      break;
    case "put":
      call = `put ${formatValue(input.value)}`;
      break;
    case "delete":
      call = "delete";
      break;
    case "cas":
      call = `cas ${formatValue(input.expected)} -> ${formatValue(input.next)}`;
      break;
  }
  const output = op.output;
  let answer: string;
  if (output === undefined) answer = "unknown (may or may not have taken effect)";
  else if (output.type === "get") answer = formatValue(output.value);
  else if (output.type === "cas") {
    answer = `${output.applied ? "applied" : "not applied"} (now ${formatValue(output.current)})`;
  } else answer = "ok";
  return `#${position} client ${op.client} ${call}: ${answer} [${formatTime(op.call)}, ${formatTime(op.return)}]`;
}
