/**
 * Readable one-line forms of entries, messages and snapshots, for logs, tests and tools:
 * `1->2 app term:2 log:1/11 commit:11 entries:[2/12 "put x"]`. Terms and indexes print as
 * term/index. Byte strings print as a JSON string when every byte is printable ASCII,
 * else as hex (the first 32 bytes).
 */
import { decodeConfChange } from "./codec.js";
import { describeConfChange, describeConfState } from "./membership.js";
import { decodeReadPosition } from "./read-only.js";
import type { Entry, Message, Snapshot } from "./types.js";

export function describeBytes(b: Uint8Array): string {
  let printable = true;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c < 0x20 || c > 0x7e) {
      printable = false;
      break;
    }
  }
  if (printable) return JSON.stringify(String.fromCharCode(...b));
  const head = b.subarray(0, 32);
  let hex = "0x";
  for (const c of head) hex += c.toString(16).padStart(2, "0");
  return b.length > head.length ? `${hex}...(${b.length} bytes)` : hex;
}

export function describeEntry(e: Entry): string {
  if (e.type === "confChange") {
    let what: string;
    try {
      what = describeConfChange(decodeConfChange(e.data));
    } catch {
      what = `malformed ${describeBytes(e.data)}`;
    }
    return `${e.term}/${e.index} conf:${what}`;
  }
  return `${e.term}/${e.index} ${describeBytes(e.data)}`;
}

export function describeEntries(ents: readonly Entry[]): string {
  return `[${ents.map(describeEntry).join(", ")}]`;
}

export function describeSnapshot(s: Snapshot): string {
  const m = s.metadata;
  return `${m.term}/${m.index} ${describeConfState(m.confState)}`;
}

export function describeMessage(m: Message): string {
  let out = `${m.from}->${m.to} ${m.type}`;
  if (m.term !== 0) out += ` term:${m.term}`;
  switch (m.type) {
    case "app":
      out += ` log:${m.logTerm}/${m.index} commit:${m.commit}`;
      if (m.entries.length > 0) out += ` entries:${describeEntries(m.entries)}`;
      break;
    case "appResp":
      out += m.reject
        ? ` rejected index:${m.index} hint:${m.logTerm}/${m.rejectHint}`
        : ` index:${m.index}`;
      if (m.context.length > 0) out += ` context:${describeBytes(m.context)}`;
      break;
    case "vote":
    case "preVote":
      out += ` log:${m.logTerm}/${m.index}`;
      if (m.context.length > 0) out += ` context:${describeBytes(m.context)}`;
      break;
    case "voteResp":
    case "preVoteResp":
      out += m.reject ? " rejected" : " granted";
      break;
    case "heartbeat":
      out += ` commit:${m.commit}`;
      if (m.context.length > 0) out += ` read:${decodeReadPosition(m.context)}`;
      break;
    case "heartbeatResp":
      if (m.context.length > 0) out += ` read:${decodeReadPosition(m.context)}`;
      break;
    case "snap":
      out +=
        m.snapshot === undefined ? " snapshot:none" : ` snapshot:[${describeSnapshot(m.snapshot)}]`;
      break;
    case "prop":
      out += ` entries:${describeEntries(m.entries)}`;
      break;
    case "readIndex":
      out += ` context:${describeBytes(m.context)}`;
      break;
    case "readIndexResp":
      out += ` index:${m.index} context:${describeBytes(m.context)}`;
      break;
    case "snapStatus":
      out += m.reject ? " failure" : " finished";
      break;
    default:
      break;
  }
  return out;
}
