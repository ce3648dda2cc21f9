/**
 * Recovery of a Raft log directory (docs/format/raft-log.md, "Recovery"): reads every
 * segment, picks the chain of segments that holds the log, replays it into a LogState,
 * and tells an unsynced tail (dropped silently) from damage to synced data (reported, the
 * entries before it kept, a repair mark set). Reads only: what to remove, set aside and
 * rewrite is returned for the storage to do (raft-log-storage.ts).
 *
 * The chain: the newest segment with a readable header is the *head*; each header names
 * the segment it continues (`previousSeq`) and how many bytes of it are part of the log
 * (`previousEnd`); following those links back stops at a self-contained header (it holds
 * every retained entry) or at a segment that was removed. Segments off the chain are
 * leftovers (superseded, or created by an open that crashed before it was durable).
 *
 * Durable points: bytes of a segment before `previousEnd` of its successor, or before the
 * highest `syncedEnd` claimed by any readable record in it, were synced. Damage before the
 * durable point is damage to synced data; damage at or after it, in the head, is an
 * unsynced tail.
 */

import { KvError } from "../../errors.js";
import type { FileSystem } from "../../vfs/file-system.js";
import { isRaftError } from "../errors.js";
import type { HardState } from "../types.js";
import type { LogRecord } from "./log-record.js";
import { formatHardState, isSelfContained, LogState } from "./log-state.js";
import { parseDamagedSegmentFileName, parseSegmentFileName } from "./segment-name.js";
import { type ReadSegment, readSegment } from "./segment-reader.js";

/** Damage to synced data that recovery found (docs/format/raft-log.md, "Damage"). */
export interface RaftLogDamage {
  /** The segment file it is in. */
  readonly segment: string;
  /** Where it starts in that file: the start of the first record it hit. */
  readonly offset: number;
  readonly reason: string;
  /** Bytes of log dropped from the damage on (the rest of that segment and later ones). */
  readonly droppedBytes: number;
}

/** A segment of the chain, as the writer tracks it. */
export interface ChainSegment {
  readonly name: string;
  readonly seq: number;
  /** Bytes of the segment that are part of the log (what the next header's previousEnd says). */
  end: number;
  /**
   * No entry of this segment beyond this index is still part of the log: the last index when
   * the next segment started, lowered by every later overwrite or snapshot install. The
   * segment can be removed once the log is compacted through it.
   */
  liveThrough: number;
}

export interface RaftLogRecovery {
  /** The log as recovered (after damage: the entries before it, the highest hard state). */
  readonly state: LogState;
  /** The chain, oldest first; empty for a new or entirely unreadable log. */
  readonly chain: ChainSegment[];
  /** Files to remove: segments off the chain, unsynced leftovers. */
  readonly obsolete: readonly string[];
  /** Files to set aside (damage found in them, or they follow the damage). */
  readonly damaged: readonly string[];
  readonly damage: RaftLogDamage | undefined;
  /** The highest segment sequence number used so far (segments and set-aside ones). */
  readonly maxSeq: number;
  readonly segmentsRead: number;
  readonly bytesRead: number;
  /** Records replayed. */
  readonly records: number;
  /** Bytes of unsynced tail dropped from the head (records and damaged framing). */
  readonly tornTailBytes: number;
}

interface Problem {
  offset: number;
  reason: string;
}

/** True iff `a` is a later hard state than `b` (higher term, or a vote in the same term). */
function laterHardState(a: HardState, b: HardState): boolean {
  return a.term > b.term || (a.term === b.term && a.vote !== 0 && b.vote === 0);
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Replays one record into `state`. Returns why it cannot be applied (undefined: applied).
 * `replaced` receives the lowest index whose stored entry the record replaced.
 */
function replay(
  state: LogState,
  record: LogRecord,
  replaced: (from: number) => void,
): string | undefined {
  try {
    switch (record.kind) {
      case "header":
        return "a segment header in the middle of a segment";
      case "save": {
        const plan = state.planSave({
          hardState: record.hardState,
          entries: record.entries,
          snapshot: record.snapshot,
        });
        if (plan.lastIndex !== record.lastIndex) {
          return `save record leaves last index ${plan.lastIndex}, but says ${record.lastIndex}`;
        }
        replaced(state.applySave(plan));
        break;
      }
      case "snapshot": {
        const { index, term, confState } = record.snapshot.metadata;
        const s = state.planCreateSnapshot(index, confState, record.snapshot.data, term);
        if (s.metadata.term !== term) {
          return `snapshot at ${index} has term ${term}, the entry there ${s.metadata.term}`;
        }
        state.applyCreateSnapshot(record.snapshot);
        break;
      }
      case "compact": {
        const term = state.planCompact(record.index, record.term);
        if (term !== record.term) {
          return `compaction to ${record.index} of term ${record.term}, the entry's term is ${term}`;
        }
        state.applyCompact(record.index, term);
        break;
      }
      case "close":
        break;
    }
  } catch (err) {
    if (isRaftError(err)) return `${record.kind} record does not apply: ${err.message}`;
    throw err;
  }
  const hs = state.hardState;
  const r = record.hardState;
  if (hs.term !== r.term || hs.vote !== r.vote || hs.commit !== r.commit) {
    return `${record.kind} record says ${formatHardState(r)}, replay gives ${formatHardState(hs)}`;
  }
  if (state.lastIndex !== record.lastIndex) {
    return `${record.kind} record says last index ${record.lastIndex}, replay gives ${state.lastIndex}`;
  }
  return undefined;
}

/** Reads and replays the log in `dir` (see the module comment). */
export async function recoverRaftLog(fs: FileSystem, dir: string): Promise<RaftLogRecovery> {
  let names: string[];
  try {
    names = await fs.list(dir);
  } catch (err) {
    throw new KvError("IO_ERROR", `list raft log directory ${dir}: ${reasonOf(err)}`, {
      cause: err,
      file: dir,
    });
  }
  let maxSeq = 0;
  const found: { name: string; seq: number }[] = [];
  for (const name of names) {
    const seq = parseSegmentFileName(name);
    if (seq !== undefined) found.push({ name, seq });
    const aside = parseSegmentFileName(name) ?? parseDamagedSegmentFileName(name) ?? 0;
    if (aside > maxSeq) maxSeq = aside;
  }
  found.sort((a, b) => a.seq - b.seq);
  const segments: ReadSegment[] = [];
  let bytesRead = 0;
  for (const f of found) {
    const seg = await readSegment(fs, dir, f.name, f.seq);
    segments.push(seg);
    bytesRead += seg.size;
  }

  // The head, and segments newer than it (no readable header): unsynced leftovers, unless a
  // record in one claims synced bytes (its header was synced and is damaged).
  let headPos = segments.length - 1;
  while (headPos >= 0 && segments[headPos]!.header === undefined) headPos--;
  const newer = segments.slice(headPos + 1);
  const provenPos = newer.findIndex((s) => s.maxClaim > 0);
  const proven = provenPos < 0 ? [] : newer.slice(provenPos);

  const chain: ReadSegment[] = [];
  if (headPos >= 0) {
    const bySeq = new Map(segments.map((s) => [s.seq, s]));
    let cur = segments[headPos]!;
    chain.push(cur);
    for (;;) {
      const h = cur.header;
      if (h === undefined || isSelfContained(h) || h.previousSeq === 0) break;
      const prev = bySeq.get(h.previousSeq);
      if (prev === undefined || prev.seq >= cur.seq) break;
      chain.unshift(prev);
      cur = prev;
    }
  }
  const onChain = new Set<string>([...chain, ...proven].map((s) => s.name));
  const obsolete = segments.filter((s) => !onChain.has(s.name)).map((s) => s.name);

  // Replay.
  const base = chain[0];
  let state = new LogState();
  let damage: { pos: number; problem: Problem } | undefined;
  if (base !== undefined) {
    if (base.header === undefined) {
      damage = {
        pos: 0,
        problem: { offset: 0, reason: base.damage?.reason ?? "the segment has no readable header" },
      };
    } else {
      try {
        state = LogState.fromHeader(base.header);
      } catch (err) {
        damage = { pos: 0, problem: { offset: 0, reason: reasonOf(err) } };
      }
    }
  }
  const tracked: ChainSegment[] = [];
  let records = 0;
  let tornTailBytes = 0;
  for (let i = 0; i < chain.length && damage === undefined; i++) {
    const seg = chain[i]!;
    const next = chain[i + 1];
    const limit = next === undefined ? Number.POSITIVE_INFINITY : next.header!.previousEnd;
    const durableEnd = Math.max(seg.maxClaim, next === undefined ? 0 : limit);
    const stopAt = Math.min(limit, seg.damage?.offset ?? Number.POSITIVE_INFINITY);
    if (i > 0) tracked[i - 1]!.liveThrough = state.lastIndex;
    const entry: ChainSegment = { name: seg.name, seq: seg.seq, end: 0, liveThrough: 0 };
    tracked.push(entry);
    const replaced = (from: number): void => {
      for (let j = 0; j < i; j++) {
        const t = tracked[j]!;
        if (t.liveThrough > from - 1) t.liveThrough = from - 1;
      }
    };
    let prefixEnd = 0;
    let problem: Problem | undefined;
    for (const rec of seg.records) {
      if (rec.start >= stopAt) break;
      if (rec.start === 0) {
        if (rec.record.kind !== "header") {
          problem = { offset: 0, reason: "the segment does not start with a header" };
          break;
        }
        if (i > 0) {
          const mismatch = state.headerMismatch(rec.record);
          if (mismatch !== undefined) {
            problem = { offset: 0, reason: mismatch };
            break;
          }
        }
        prefixEnd = rec.end;
        records++;
        continue;
      }
      const reason = replay(state, rec.record, replaced);
      if (reason !== undefined) {
        problem = { offset: rec.start, reason };
        break;
      }
      prefixEnd = rec.end;
      records++;
    }
    if (problem === undefined && seg.damage !== undefined && seg.damage.offset < limit) {
      problem = seg.damage;
    }
    if (problem === undefined && next !== undefined && prefixEnd < limit) {
      problem = {
        offset: prefixEnd,
        reason: `the segment's records end at offset ${prefixEnd}, but the next segment says ${limit} bytes of it are durable`,
      };
    }
    if (problem !== undefined && problem.offset < durableEnd) {
      damage = { pos: i, problem };
      break;
    }
    if (problem !== undefined) {
      // The head's unsynced tail: everything from the problem on is dropped.
      tornTailBytes += seg.droppedBytes;
      for (const rec of seg.records)
        if (rec.start >= problem.offset) tornTailBytes += rec.end - rec.start;
    }
    entry.end = next === undefined ? prefixEnd : limit;
  }
  if (tracked.length > 0 && damage === undefined) {
    tracked[tracked.length - 1]!.liveThrough = state.lastIndex;
  }
  if (damage === undefined && proven.length > 0) {
    damage = {
      pos: chain.length,
      problem: {
        offset: 0,
        reason: `${proven[0]!.damage?.reason ?? "no readable header"}; a record in the segment claims ${proven[0]!.maxClaim} bytes of it were synced`,
      },
    };
  }
  const all = [...chain, ...proven];

  let reported: RaftLogDamage | undefined;
  let damaged: string[] = [];
  let superseded: string[] = [];
  if (damage !== undefined) {
    // Keep the entries before the damage; take the highest hard state and last index of
    // every readable record after it, so that the term never goes back and the node knows
    // what it may have acknowledged.
    const { pos, problem } = damage;
    let latest = state.hardState;
    let highest = Math.max(state.lastIndex, state.repairThrough);
    let dropped = 0;
    for (let i = pos; i < all.length; i++) {
      const seg = all[i]!;
      const next = all[i + 1];
      const limit = next?.header === undefined ? seg.size : next.header.previousEnd;
      dropped += Math.max(0, Math.min(seg.size, limit) - (i === pos ? problem.offset : 0));
      for (const rec of seg.records) {
        if (i === pos && rec.start < problem.offset) continue;
        if (rec.start >= limit) continue;
        if (laterHardState(rec.record.hardState, latest)) latest = rec.record.hardState;
        if (rec.record.lastIndex > highest) highest = rec.record.lastIndex;
      }
    }
    reported = {
      segment: all[pos]!.name,
      offset: problem.offset,
      reason: problem.reason,
      droppedBytes: dropped,
    };
    damaged = all.slice(pos).map((s) => s.name);
    superseded = all.slice(0, pos).map((s) => s.name);
    state.hardState = { term: latest.term, vote: latest.vote, commit: latest.commit };
    state.repairThrough = highest;
  }
  if (state.hasGap) {
    if (state.entriesStart - 1 <= state.snapshot.metadata.index) {
      // The missing entries are all covered by the snapshot: nothing is lost.
      state.applyCompact(state.snapshot.metadata.index, state.snapshot.metadata.term);
    } else {
      if (reported === undefined) {
        reported = {
          segment: chain[0]!.name,
          offset: 0,
          reason:
            `entries ${state.compactIndex + 1} to ${state.entriesStart - 1} are missing: the ` +
            "segments before this one that held them were removed or lost",
          droppedBytes: bytesRead,
        };
        damaged = all.map((s) => s.name);
      }
      state.repairThrough = Math.max(state.repairThrough, state.lastIndex);
      state.dropEntries();
    }
  }
  if (reported !== undefined) {
    const hs = state.hardState;
    if (hs.commit > state.lastIndex) state.hardState = { ...hs, commit: state.lastIndex };
  }
  return {
    state,
    chain: reported === undefined ? tracked : [],
    obsolete: [...obsolete, ...superseded],
    damaged,
    damage: reported,
    maxSeq,
    segmentsRead: segments.length,
    bytesRead,
    records,
    tornTailBytes,
  };
}
