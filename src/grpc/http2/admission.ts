/**
 * Server-wide admission of streams to the layer above (the gRPC handlers), shared by every
 * connection of one server, so that one client's flood cannot take the whole server:
 *
 * - a connection may always have `reserved` streams at work (so that a client whose
 *   requests are few, a health check or a probe, is started at once whatever the others
 *   do, and streams that never finish, e.g. scans to clients that stopped reading, cannot
 *   lock the other connections out);
 * - beyond its reserve, a stream is started only while fewer than `limit` streams are at
 *   work over all connections; otherwise it waits in its connection, and the connections
 *   with waiting streams take turns (round robin, one stream per turn) as slots free up.
 *
 * So at most `limit + reserved x connections` streams are at work at once, and a freed
 * slot goes to the connection whose turn it is, not to the one that freed it. Each
 * connection also keeps its own limit (maxConcurrentStreams, stream-starts.ts).
 *
 * Legal call order, per stream: `admits()` true then `acquired()`, or `wait()`; then,
 * exactly once per `acquired()`, `released()` when its work settled.
 */

/** What the admission needs of a connection (its StreamStarts, stream-starts.ts). */
export interface AdmissionMember {
  /**
   * Starts the stream of this connection that has waited longest, if the connection's own
   * limit allows (calling `acquired()`); returns whether a stream was started.
   */
  startWaiting(): boolean;
  /** Streams still waiting in this connection (after a `startWaiting()`). */
  readonly hasWaiting: boolean;
}

export class Admission {
  /** Streams at work over all connections. */
  running = 0;
  /** Connections with streams waiting for a slot, in turn order (each at most once). */
  private readonly turns: AdmissionMember[] = [];
  private readonly queued = new Set<AdmissionMember>();
  private pumping = false;

  constructor(
    /** Streams at work over all connections (each connection's reserve may go past it). */
    readonly limit: number,
    /** Streams each connection may have at work whatever the others do. */
    readonly reserved: number,
  ) {}

  /** May a connection with `busy` streams at work start another now? */
  admits(busy: number): boolean {
    return busy < this.reserved || this.running < this.limit;
  }

  /** A stream was started. */
  acquired(): void {
    this.running++;
  }

  /** A started stream's work settled: its slot goes to the connection whose turn it is. */
  released(): void {
    this.running--;
    this.pump();
  }

  /** `member` has a stream waiting for a slot: it gets a turn. */
  wait(member: AdmissionMember): void {
    if (this.queued.has(member)) return;
    this.queued.add(member);
    this.turns.push(member);
  }

  /** Connections with streams waiting for a turn (for stats and tests). */
  get waitingConnections(): number {
    let n = 0;
    for (const m of this.turns) if (m.hasWaiting) n++;
    return n;
  }

  private pump(): void {
    // A stream started here may settle at once (a refused call) and release its slot:
    // the loop below goes on with it.
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.turns.length > 0 && this.running < this.limit) {
        const member = this.turns.shift()!;
        this.queued.delete(member);
        // Nothing startable (its streams were reset, or it is at its own limit): it asks
        // for a turn again when it has one.
        if (!member.startWaiting()) continue;
        if (member.hasWaiting) this.wait(member);
      }
    } finally {
      this.pumping = false;
    }
  }
}
