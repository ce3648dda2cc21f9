/**
 * A KvClient's client session (docs/cluster.md, "Retries that apply once"): the session
 * the cluster opened for it, the sequence numbers of its writes and the mark it sends with
 * each (the lowest sequence number whose answer it has not yet taken), so that a write
 * sent again after an unknown outcome is applied once.
 *
 * - `open` is single-flight: concurrent writes share one OpenSession call. A server that
 *   keeps no sessions (a single-node server answers UNIMPLEMENTED) turns sessions off for
 *   good: writes then go without one and are not sent again after an unknown outcome.
 * - `next()` numbers a write; `settled(seq)` says its caller has its answer (or gave up on
 *   it): the mark moves past it once every lower write settled too.
 * - A write whose outcome stayed unknown may be kept unsettled (`keep`) so that it can be
 *   sent again later with its sequence number; at most MAX_WINDOW sequence numbers lie
 *   between the mark and the newest write (the cluster keeps 4,096 results per session):
 *   the oldest kept write is settled (given up) when the window would grow past that.
 * - `expired(id)`: the cluster refused the session; the next write opens a new one.
 */

/** The most sequence numbers between the mark and the newest write. */
export const MAX_WINDOW = 2048;

/** What the server's OpenSession answered. */
export interface OpenedSession {
  readonly id: bigint;
  readonly ttlMs: bigint;
}

/** A write's place in the session, as sent. */
export interface SessionPlace {
  readonly id: bigint;
  readonly seq: bigint;
  readonly ackedBelow: bigint;
}

export class WriteSession {
  private id: bigint | undefined;
  private opening: Promise<bigint | undefined> | undefined;
  /** False once a server said it keeps no sessions. */
  private supported = true;
  private nextSeq = 1;
  /** The lowest sequence number not yet settled. */
  private low = 1;
  /** Settled sequence numbers above `low`. */
  private readonly settledAbove = new Set<number>();
  /** Writes kept unsettled for a later resend, oldest first, with what gives them up. */
  private readonly kept = new Map<number, () => void>();

  /**
   * `openCall` asks a server for a session; it rejects with `unsupported(err)` true when
   * the server keeps none.
   */
  constructor(
    private readonly openCall: (timeoutMs: number | undefined) => Promise<OpenedSession>,
    private readonly unsupported: (err: unknown) => boolean,
  ) {}

  /**
   * The current session's ID, opening one first if needed (within `timeoutMs`; a call
   * that joins one being opened waits for it); undefined: no sessions.
   */
  async open(timeoutMs?: number): Promise<bigint | undefined> {
    if (!this.supported) return undefined;
    if (this.id !== undefined) return this.id;
    this.opening ??= this.openCall(timeoutMs).then(
      (s) => {
        this.opening = undefined;
        this.id = s.id;
        this.nextSeq = 1;
        this.low = 1;
        this.settledAbove.clear();
        for (const giveUp of this.kept.values()) giveUp();
        this.kept.clear();
        return s.id;
      },
      (err: unknown) => {
        this.opening = undefined;
        if (this.unsupported(err)) {
          this.supported = false;
          return undefined;
        }
        throw err;
      },
    );
    return this.opening;
  }

  /** A sequence number for a new write in session `id` (from `open`). */
  next(id: bigint): SessionPlace {
    const seq = this.nextSeq++;
    while (seq - this.low >= MAX_WINDOW) {
      const [oldest, giveUp] = this.kept.entries().next().value ?? [this.low, undefined];
      if (giveUp === undefined || oldest !== this.low) break;
      this.kept.delete(oldest);
      giveUp();
      this.settled(id, oldest);
    }
    return { id, seq: BigInt(seq), ackedBelow: BigInt(this.low) };
  }

  /** The place to send write `seq` again with (the current mark). */
  again(id: bigint, seq: bigint): SessionPlace {
    return { id, seq, ackedBelow: BigInt(this.low) };
  }

  /** Write `seq` of session `id` has its answer (or its caller gave up on it). */
  settled(id: bigint, seq: number): void {
    if (id !== this.id || seq < this.low) return;
    this.kept.delete(seq);
    if (seq !== this.low) {
      this.settledAbove.add(seq);
      return;
    }
    this.low++;
    while (this.settledAbove.delete(this.low)) this.low++;
  }

  /**
   * Keeps write `seq` unsettled for a resend; `giveUp` is called if it is settled for it
   * (the window is full, or the session was replaced).
   */
  keep(id: bigint, seq: number, giveUp: () => void): void {
    if (id !== this.id) {
      giveUp();
      return;
    }
    this.kept.set(seq, giveUp);
  }

  /** The cluster refused session `id` (expired or unknown): the next write opens another. */
  expired(id: bigint): void {
    if (this.id === id) this.id = undefined;
  }

  /** The lowest unsettled sequence number (for tests). */
  get mark(): number {
    return this.low;
  }
}
