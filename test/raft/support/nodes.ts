/**
 * Helpers for unit tests that drive single RawNodes by hand: storages with a given log,
 * messages with defaults, and one Ready cycle that persists everything at once.
 */
import type { RaftConfig } from "../../../src/raft/config.js";
import { MemoryStorage } from "../../../src/raft/memory-storage.js";
import { RawNode, type Ready } from "../../../src/raft/raw-node.js";
import type { ConfState, Entry, HardState, Message, NodeId } from "../../../src/raft/types.js";

export function voters(...ids: NodeId[]): ConfState {
  return { voters: ids, learners: [] };
}

/** A storage whose log holds entries with `terms` at indexes 1, 2, ... (data "i"). */
export function storageWith(
  cs: ConfState,
  terms: readonly number[] = [],
  hs?: HardState,
): MemoryStorage {
  const s = new MemoryStorage({ confState: cs });
  const ents: Entry[] = terms.map((term, i) => ({
    term,
    index: i + 1,
    type: "normal",
    data: new TextEncoder().encode(String(i + 1)),
  }));
  s.append(ents);
  if (hs !== undefined) s.setHardState(hs);
  else if (terms.length > 0) s.setHardState({ term: terms[terms.length - 1]!, vote: 0, commit: 0 });
  return s;
}

export type Options = Omit<RaftConfig, "id" | "storage">;

export function node(id: NodeId, storage: MemoryStorage, options: Options = {}): RawNode {
  return new RawNode({ preVote: false, checkQuorum: false, ...options, id, storage });
}

export function message(fields: Partial<Message> & Pick<Message, "type" | "from" | "to">): Message {
  return {
    term: 0,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: new Uint8Array(0),
    ...fields,
  };
}

export function entry(term: number, index: number, data = ""): Entry {
  return { term, index, type: "normal", data: new TextEncoder().encode(data) };
}

/**
 * Runs Ready cycles until the node has none, persisting each into `storage`; returns
 * every message it would send (messages and messagesAfterPersist) and the Readies.
 */
export function drain(n: RawNode, storage: MemoryStorage): { sent: Message[]; readies: Ready[] } {
  const sent: Message[] = [];
  const readies: Ready[] = [];
  for (let i = 0; i < 100 && n.hasReady(); i++) {
    const rd = n.ready();
    readies.push(rd);
    sent.push(...rd.messages);
    storage.save(rd);
    sent.push(...rd.messagesAfterPersist);
    n.advance();
  }
  return { sent, readies };
}

export function committed(readies: readonly Ready[]): Entry[] {
  return readies.flatMap((rd) => [...rd.committedEntries]);
}

export function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}
