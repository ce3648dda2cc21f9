/**
 * The leader's ReadIndex queue (Raft thesis 6.4, "safe" reads). Each request records the
 * commit index when it arrived and gets a position (1, 2, 3, ... within a leadership). A
 * confirmation round is one heartbeat broadcast carrying the highest position queued so
 * far in its context; a follower echoes the context in its response. Once a majority of
 * voters (the leader included) echoed a position >= p, the leader was still the leader
 * after request p arrived, so every request up to p is confirmed at its recorded index.
 * Many requests share one round: the leader starts a round only when requests wait that no
 * round sent so far covers, and it sends rounds when the application collects messages.
 */
import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import { quorumIndex } from "./quorum.js";
import type { NodeId } from "./types.js";

export interface ReadRequest {
  /** The node that asked (this node for a local request). */
  readonly from: NodeId;
  readonly context: Uint8Array;
  /** The commit index when the request arrived: the read is served once applied >= it. */
  readonly index: number;
}

const EMPTY = new Uint8Array(0);

/** The heartbeat context naming read position `p`. */
export function encodeReadPosition(p: number): Uint8Array {
  const out = new Uint8Array(varintLength(p));
  putVarint(out, 0, p);
  return out;
}

const slot: VarintResult = { value: 0, offset: 0 };

/** The read position a heartbeat response echoes, or 0 if its context names none. */
export function decodeReadPosition(ctx: Uint8Array): number {
  if (ctx.length === 0) return 0;
  try {
    getVarint(ctx, 0, slot);
  } catch {
    return 0;
  }
  return slot.offset === ctx.length ? slot.value : 0;
}

export class ReadOnlyQueue {
  private queue: ReadRequest[] = [];
  private head = 0;
  /** Requests confirmed so far (the position of the last confirmed one). */
  private confirmed = 0;
  /** The highest position a round carried. */
  private sent = 0;
  private readonly acks = new Map<NodeId, number>();
  private readonly scratch: number[] = [];

  get pending(): number {
    return this.queue.length - this.head;
  }

  /** The position of the last request queued. */
  private last(): number {
    return this.confirmed + this.pending;
  }

  add(req: ReadRequest): void {
    this.queue.push(req);
  }

  /** True iff requests wait that no round sent so far covers. */
  needsRound(): boolean {
    return this.last() > this.sent;
  }

  /**
   * The context for a heartbeat broadcast: covers every request queued so far (and
   * records the leader's own acknowledgement), or empty if none waits.
   */
  roundContext(self: NodeId): Uint8Array {
    const p = this.last();
    if (p === this.confirmed) return EMPTY;
    this.sent = p;
    this.recvAck(self, p);
    return encodeReadPosition(p);
  }

  recvAck(from: NodeId, position: number): void {
    if (position > (this.acks.get(from) ?? 0)) this.acks.set(from, position);
  }

  /** The requests a majority of `voters` has now confirmed, in arrival order. */
  advance(voters: readonly NodeId[]): ReadRequest[] {
    const m = this.scratch;
    m.length = 0;
    for (const id of voters) m.push(this.acks.get(id) ?? 0);
    const p = Math.min(quorumIndex(m), this.last());
    if (p <= this.confirmed) return [];
    const n = p - this.confirmed;
    const out = this.queue.slice(this.head, this.head + n);
    this.head += n;
    this.confirmed = p;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return out;
  }
}
