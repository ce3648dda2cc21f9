/**
 * In-process clusters of ReplicatedStores for tests: each member has its own
 * MemoryFileSystem (so it can be crash-cloned alone) or a directory on the real file
 * system, all talk through one MemoryNetwork. Ticks are short (20 ms) so elections take
 * a fraction of a second.
 */
import { isKvError } from "../../../src/errors.js";
import type { ReplicationEvent } from "../../../src/replication/events.js";
import {
  MemoryNetwork,
  type MemoryNetworkOptions,
  type MemoryTransport,
} from "../../../src/replication/memory-transport.js";
import type { ReplicatedStoreOptions } from "../../../src/replication/options.js";
import { ReplicatedStore } from "../../../src/replication/replicated-store.js";
import type { FileSystem } from "../../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { RealFileSystem } from "../../../src/vfs/real-file-system.js";
import { tempDir } from "../../support/temp-dir.js";
import { waitFor } from "../../support/wait-for.js";

export const TICK_MS = 20;

export interface MemberSlot {
  readonly name: string;
  peerAddress: string;
  clientAddress: string;
  fs: FileSystem;
  dataDir: string;
  store: ReplicatedStore | undefined;
  transport: MemoryTransport | undefined;
  /** Options for (re)starts beyond the common ones. */
  extra: Partial<ReplicatedStoreOptions>;
  readonly events: ReplicationEvent[];
}

export interface ClusterOptions {
  readonly size: number;
  readonly network?: MemoryNetworkOptions;
  /** Members on the real file system in a temp dir (default: MemoryFileSystem). */
  readonly realFs?: boolean;
  readonly member?: Partial<ReplicatedStoreOptions>;
  readonly seed?: number;
}

export class TestCluster {
  readonly network: MemoryNetwork;
  readonly slots = new Map<string, MemberSlot>();
  readonly initialCluster: string;
  private readonly temp: { path: string; remove: () => void } | undefined;
  private seed: number;

  private constructor(private readonly options: ClusterOptions) {
    this.network = new MemoryNetwork({ seed: options.seed ?? 1, ...options.network });
    this.seed = options.seed ?? 1;
    this.temp = options.realFs === true ? tempDir("kv-cluster-") : undefined;
    const names = Array.from({ length: options.size }, (_, i) => `n${i + 1}`);
    this.initialCluster = names.map((n, i) => `${n}=127.0.0.1:${7001 + i}`).join(",");
    names.forEach((name, i) => {
      this.addSlot(name, `127.0.0.1:${7001 + i}`, `127.0.0.1:${8001 + i}`);
    });
  }

  /** A cluster whose members are not started yet (set up their slots, then startMember). */
  static prepare(options: ClusterOptions): TestCluster {
    return new TestCluster(options);
  }

  static async start(options: ClusterOptions): Promise<TestCluster> {
    const c = new TestCluster(options);
    await Promise.all([...c.slots.keys()].map((n) => c.startMember(n)));
    return c;
  }

  addSlot(name: string, peerAddress: string, clientAddress: string): MemberSlot {
    const fs: FileSystem = this.temp === undefined ? new MemoryFileSystem() : new RealFileSystem();
    const dataDir = this.temp === undefined ? `/${name}` : `${this.temp.path}/${name}`;
    const slot: MemberSlot = {
      name,
      peerAddress,
      clientAddress,
      fs,
      dataDir,
      store: undefined,
      transport: undefined,
      extra: {},
      events: [],
    };
    this.slots.set(name, slot);
    return slot;
  }

  slot(name: string): MemberSlot {
    const s = this.slots.get(name);
    if (s === undefined) throw new Error(`no member ${name}`);
    return s;
  }

  store(name: string): ReplicatedStore {
    const s = this.slot(name).store;
    if (s === undefined) throw new Error(`member ${name} is down`);
    return s;
  }

  /** The running members. */
  running(): ReplicatedStore[] {
    return [...this.slots.values()].flatMap((s) => (s.store === undefined ? [] : [s.store]));
  }

  async startMember(name: string, initialCluster = this.initialCluster): Promise<ReplicatedStore> {
    const slot = this.slot(name);
    const transport = this.network.transport();
    slot.transport = transport;
    const store = await ReplicatedStore.open({
      dataDir: slot.dataDir,
      fs: slot.fs,
      name,
      initialCluster,
      clientAddress: slot.clientAddress,
      transport,
      tickMs: TICK_MS,
      seed: this.seed++,
      onEvent: (e) => slot.events.push(e),
      ...this.options.member,
      ...slot.extra,
    });
    slot.store = store;
    return store;
  }

  /** Stops a member cleanly. */
  async stop(name: string): Promise<void> {
    const slot = this.slot(name);
    const store = slot.store;
    slot.store = undefined;
    await store?.close();
  }

  /**
   * Kills a member as a power loss would: its disk keeps what was synced (and unsynced
   * writes with probability `retention`), the process stops without another write.
   * Requires a MemoryFileSystem.
   */
  async crash(name: string, retention = 0, seed = 0): Promise<void> {
    const slot = this.slot(name);
    const mem = slot.fs as MemoryFileSystem;
    // Nothing leaves the member from now on (its acknowledgements vouch for its disk).
    await slot.transport?.close();
    const clone = mem.crashClone({ unsyncedRetention: retention, seed });
    const store = slot.store;
    slot.store = undefined;
    slot.fs = clone;
    // The old incarnation writes only to the old disk from now on.
    await store?.close().catch(() => {});
  }

  /** The member that leads, as every running member agrees (or undefined). */
  leader(): ReplicatedStore | undefined {
    const leaders = this.running().filter((s) => s.status().role === "leader");
    if (leaders.length !== 1) return undefined;
    const id = leaders[0]!.memberId;
    const term = leaders[0]!.status().term;
    for (const s of this.running()) {
      const st = s.status();
      if (st.term === term && st.leader !== id && !st.removed) return undefined;
    }
    return leaders[0];
  }

  async waitForLeader(limitMs = 10_000): Promise<ReplicatedStore> {
    let leader: ReplicatedStore | undefined;
    await waitFor(
      () => {
        leader = this.leader();
        return leader !== undefined;
      },
      "a leader",
      limitMs,
    );
    return leader!;
  }

  /** Waits until every running member applied at least `index`. */
  async waitForApplied(index: number, limitMs = 10_000): Promise<void> {
    await waitFor(
      () => this.running().every((s) => s.status().applied >= index),
      `applied ${index} everywhere`,
      limitMs,
    );
  }

  /** Retries `op` while it fails with UNAVAILABLE (no leader yet, not proposed). */
  static async retry<T>(op: () => Promise<T>, limitMs = 10_000): Promise<T> {
    const until = Date.now() + limitMs;
    for (;;) {
      try {
        return await op();
      } catch (err) {
        if (!isKvError(err, "UNAVAILABLE") || Date.now() > until) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.slots.keys()].map((n) => this.stop(n).catch(() => {})));
    this.temp?.remove();
  }
}

export const text = (v: Uint8Array | undefined): string | undefined =>
  v === undefined ? undefined : Buffer.from(v).toString();
export const bytes = (s: string): Uint8Array => Buffer.from(s);
