/**
 * Snapshots of the adapter. An explicit abstract-level snapshot (`db.snapshot()`) holds an
 * engine Snapshot through a SnapshotPin; so does every iterator (its implicit snapshot),
 * since `seek()` reopens the engine iterator and must see the same state. The engine
 * snapshot is released when the last holder lets go. (abstract-level refuses reads on a
 * closed snapshot, also through iterators made with it; holding the engine snapshot keeps
 * such an iterator's seek() from failing with an engine error instead.)
 */
import { AbstractSnapshot } from "abstract-level";
import type { KvStore, Snapshot } from "../index.js";

/** A reference-counted hold on an engine snapshot of one store. */
export class SnapshotPin {
  private refs = 1;

  constructor(
    readonly store: KvStore,
    readonly snapshot: Snapshot,
  ) {}

  /** Another hold, or undefined once the snapshot was released. */
  acquire(): this | undefined {
    if (this.refs === 0) return undefined;
    this.refs++;
    return this;
  }

  release(): void {
    if (--this.refs === 0) this.snapshot.release();
  }
}

/** abstract-level's AbstractSnapshot as its implementation defines it (the typings omit it). */
const SnapshotBase = AbstractSnapshot as unknown as new (options: {
  owner: object;
}) => AbstractSnapshot;

export class KvEngineSnapshot extends SnapshotBase {
  /** @internal */
  readonly pin: SnapshotPin;

  /** @internal created by KvEngineLevel#snapshot() */
  constructor(options: { owner: object }, pin: SnapshotPin) {
    super(options);
    this.pin = pin;
  }

  /** @internal called once by AbstractSnapshot#close() when no read uses it */
  async _close(): Promise<void> {
    this.pin.release();
  }
}

/** The engine snapshot behind a read's `snapshot` option (checked to belong to `store`). */
export function pinOf(snapshot: unknown, store: KvStore): SnapshotPin | undefined {
  if (snapshot === undefined || snapshot === null) return undefined;
  if (!(snapshot instanceof KvEngineSnapshot) || snapshot.pin.store !== store) {
    throw new TypeError("The snapshot option must be a snapshot made by this database");
  }
  return snapshot.pin;
}
