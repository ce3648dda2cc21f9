/**
 * The small key-value state machine the simulation runs on the Raft core. Normal entries
 * carry one client command (put, delete or compare-and-swap) tagged with the client's ID
 * and request number; an empty entry is a leader's no-op. Each client has one request
 * outstanding at a time and numbers them upwards, so the state machine keeps, per client,
 * the last request applied and its answer: a retried request that was already applied is
 * answered from there and never applied twice (the Raft thesis's client sessions).
 *
 * The state (values, sessions, the applied index and its term, the configuration as of
 * it) is persisted as one file with writeFileAtomically, so the applied index is durable
 * together with the state it describes: a restarted node skips the entries at or below
 * it. The same bytes are the snapshot data the simulation streams to followers.
 */
import type { ConfState, Entry } from "../../../src/raft/types.js";
import { writeFileAtomically } from "../../../src/vfs/atomic-write.js";
import { type FileSystem, joinPath } from "../../../src/vfs/file-system.js";
import { type KvInput, kvStep } from "../../support/linearizability/index.js";
import type { KvOutput } from "../../support/linearizability/operation.js";

export interface KvCommand {
  readonly client: number;
  readonly request: number;
  readonly key: string;
  readonly input: KvInput;
}

/** The answer to one applied (or deduplicated) command. */
export interface KvResult {
  readonly client: number;
  readonly request: number;
  readonly output: KvOutput;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON with `null` for absent values (JSON has no undefined). */
export function encodeCommand(c: KvCommand): Uint8Array {
  const i = c.input;
  const wire = i.type === "cas" ? { ...i, expected: i.expected ?? null, next: i.next ?? null } : i;
  return encoder.encode(JSON.stringify({ c: c.client, r: c.request, k: c.key, i: wire }));
}

export function decodeCommand(bytes: Uint8Array): KvCommand {
  const w = JSON.parse(decoder.decode(bytes)) as {
    c: number;
    r: number;
    k: string;
    i: { type: string; value?: string; expected?: string | null; next?: string | null };
  };
  let input: KvInput;
  switch (w.i.type) {
    case "put":
      input = { type: "put", value: w.i.value! };
      break;
    case "delete":
      input = { type: "delete" };
      break;
    case "cas":
      input = { type: "cas", expected: w.i.expected ?? undefined, next: w.i.next ?? undefined };
      break;
    default:
      throw new Error(`simulation: an entry holds an unknown command ${w.i.type}`);
  }
  return { client: w.c, request: w.r, key: w.k, input };
}

interface Session {
  readonly request: number;
  readonly output: KvOutput;
}

interface StateFile {
  version: 1;
  applied: number;
  appliedTerm: number;
  confState: ConfState;
  data: [string, string][];
  sessions: [number, Session][];
}

export class KvStateMachine {
  /** The index (and term) of the last entry whose effect the state holds. */
  applied: number;
  appliedTerm: number;
  /** The configuration as of `applied` (kept up to date by the node). */
  confState: ConfState;
  readonly #data: Map<string, string>;
  readonly #sessions: Map<number, Session>;

  constructor(state?: StateFile) {
    this.applied = state?.applied ?? 0;
    this.appliedTerm = state?.appliedTerm ?? 0;
    this.confState = state?.confState ?? { voters: [], learners: [] };
    this.#data = new Map(state?.data ?? []);
    this.#sessions = new Map(
      (state?.sessions ?? []).map(([c, s]) => [
        c,
        { request: s.request, output: fromWire(s.output) },
      ]),
    );
  }

  /** The value of `key`, undefined if absent. */
  get(key: string): string | undefined {
    return this.#data.get(key);
  }

  /**
   * Applies entry `e`, which must be the next one (index applied + 1). Returns the answer
   * for a normal entry carrying a command (from the session if it was applied before),
   * undefined for a no-op or a conf change (whose effect the node applies to the core).
   */
  apply(e: Entry): KvResult | undefined {
    if (e.index !== this.applied + 1) {
      throw new Error(`state machine at ${this.applied} was handed entry ${e.index}`);
    }
    this.applied = e.index;
    this.appliedTerm = e.term;
    if (e.type !== "normal" || e.data.length === 0) return undefined;
    const cmd = decodeCommand(e.data);
    const session = this.#sessions.get(cmd.client);
    if (session !== undefined && cmd.request <= session.request) {
      // Applied before: a retry (or a stale duplicate) changes nothing.
      return cmd.request === session.request
        ? { client: cmd.client, request: cmd.request, output: session.output }
        : undefined;
    }
    const before = this.#data.get(cmd.key);
    const after = kvStep(before, cmd.input, undefined) as string | undefined;
    if (after === undefined) this.#data.delete(cmd.key);
    else this.#data.set(cmd.key, after);
    let output: KvOutput;
    switch (cmd.input.type) {
      case "cas":
        output = { type: "cas", applied: before === cmd.input.expected, current: after };
        break;
      case "put":
        output = { type: "put" };
        break;
      case "delete":
        output = { type: "delete" };
        break;
      case "get":
        throw new Error("simulation: a get was proposed");
    }
    this.#sessions.set(cmd.client, { request: cmd.request, output });
    return { client: cmd.client, request: cmd.request, output };
  }

  /** The whole state as bytes: the durable file's content and the snapshot data. */
  serialize(): Uint8Array {
    const state: StateFile = {
      version: 1,
      applied: this.applied,
      appliedTerm: this.appliedTerm,
      confState: this.confState,
      data: [...this.#data].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
      sessions: [...this.#sessions]
        .sort((a, b) => a[0] - b[0])
        .map(([c, s]) => [c, { request: s.request, output: toWire(s.output) }]),
    };
    return encoder.encode(JSON.stringify(state));
  }

  static deserialize(bytes: Uint8Array): KvStateMachine {
    const state = JSON.parse(decoder.decode(bytes)) as StateFile;
    if (state.version !== 1) throw new Error(`state machine file version ${state.version}`);
    return new KvStateMachine(state);
  }

  /** Persists the state (and so the applied index) durably in `dir`. */
  async save(fs: FileSystem, dir: string): Promise<void> {
    await KvStateMachine.saveBytes(fs, dir, this.serialize());
  }

  /** Persists serialized state durably in `dir` (one save at a time per directory). */
  static async saveBytes(fs: FileSystem, dir: string, state: Uint8Array): Promise<void> {
    await writeFileAtomically(fs, joinPath(dir, STATE_FILE), state);
  }

  /** The state persisted in `dir`, or an empty one if none was. */
  static async load(fs: FileSystem, dir: string): Promise<KvStateMachine> {
    const path = joinPath(dir, STATE_FILE);
    if (!(await fs.exists(path))) return new KvStateMachine();
    const file = await fs.openReadable(path);
    try {
      const bytes = new Uint8Array(file.size);
      file.read(bytes, 0);
      return KvStateMachine.deserialize(bytes);
    } finally {
      await file.close();
    }
  }
}

const STATE_FILE = "kv-state";

/** JSON has no undefined: absent values travel as null. */
function toWire(o: KvOutput): KvOutput {
  if (o.type === "cas") return { ...o, current: (o.current ?? null) as unknown as undefined };
  return o;
}

function fromWire(o: KvOutput): KvOutput {
  if (o.type === "cas") return { ...o, current: o.current ?? undefined };
  return o;
}
