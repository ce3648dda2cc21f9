/**
 * The core over the durable log: three RawNodes, each saving every Ready into its own
 * RaftLogStorage (one `save(rd)`), elect a leader and commit; a node restarted from its
 * disk comes back with its term, vote and log; a node whose synced log was damaged
 * restarts in repair (it refuses to vote), is healed by the leader's entries, and its
 * storage then stops reporting the repair.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RawNode } from "../../../src/raft/raw-node.js";
import { RaftLogStorage } from "../../../src/raft/storage/index.js";
import { readSegment } from "../../../src/raft/storage/segment-reader.js";
import type { Message, NodeId } from "../../../src/raft/types.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";

const DIR = "/raft";
const VOTERS = [1, 2, 3];

interface Node {
  id: NodeId;
  fs: MemoryFileSystem;
  storage: RaftLogStorage;
  raw: RawNode;
  applied: number;
  up: boolean;
}

async function startNode(id: NodeId, fs: MemoryFileSystem, applied: number): Promise<Node> {
  const storage = await RaftLogStorage.open(fs, DIR);
  if (storage.lastIndex() === 0 && storage.snapshot().metadata.confState.voters.length === 0) {
    await storage.save({
      snapshot: {
        metadata: { index: 0, term: 0, confState: { voters: VOTERS, learners: [] } },
        data: new Uint8Array(),
      },
    });
  }
  const raw = new RawNode({ id, storage, applied, seed: 7 });
  return { id, fs, storage, raw, applied, up: true };
}

/** Runs every node's Ready cycle and delivers messages until nothing moves. */
async function stabilize(nodes: Map<NodeId, Node>): Promise<void> {
  for (let round = 0; round < 200; round++) {
    let moved = false;
    const outbox: Message[] = [];
    for (const n of nodes.values()) {
      if (!n.up || !n.raw.hasReady()) continue;
      moved = true;
      const rd = n.raw.ready();
      outbox.push(...rd.messages);
      await n.storage.save(rd);
      outbox.push(...rd.messagesAfterPersist);
      for (const e of rd.committedEntries) n.applied = e.index;
      n.raw.advance();
    }
    for (const m of outbox) {
      const to = nodes.get(m.to);
      if (to?.up) to.raw.step(m);
    }
    if (!moved && outbox.length === 0) return;
  }
  assert.fail("the group did not settle");
}

async function group(): Promise<Map<NodeId, Node>> {
  const nodes = new Map<NodeId, Node>();
  for (const id of VOTERS) nodes.set(id, await startNode(id, new MemoryFileSystem(), 0));
  nodes.get(1)!.raw.campaign();
  await stabilize(nodes);
  assert.equal(nodes.get(1)!.raw.status().role, "leader");
  return nodes;
}

async function propose(nodes: Map<NodeId, Node>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    nodes.get(1)!.raw.propose(new TextEncoder().encode(`value ${i}`));
    await stabilize(nodes);
  }
}

async function restart(nodes: Map<NodeId, Node>, id: NodeId): Promise<Node> {
  const old = nodes.get(id)!;
  old.up = false;
  await old.storage.close();
  const fresh = await startNode(id, old.fs, old.applied);
  nodes.set(id, fresh);
  return fresh;
}

describe("RawNode over RaftLogStorage", () => {
  test("a group elects and commits; a restarted node comes back with its term, vote and log", async () => {
    const nodes = await group();
    await propose(nodes, 10);
    const leader = nodes.get(1)!;
    const last = leader.storage.lastIndex();
    assert.ok(last >= 11);
    for (const n of nodes.values()) {
      assert.equal(n.storage.lastIndex(), last, `node ${n.id}`);
      assert.equal(n.applied, last, `node ${n.id} applied`);
    }
    const before = nodes.get(3)!.raw.status();
    const again = await restart(nodes, 3);
    const after = again.raw.status();
    assert.equal(after.term, before.term);
    assert.equal(after.vote, before.vote);
    assert.equal(after.lastIndex, last);
    await propose(nodes, 3);
    assert.equal(again.storage.lastIndex(), last + 3);
    for (const n of nodes.values()) await n.storage.close();
  });

  test("a node whose synced log is damaged restarts in repair, refuses to vote, and is healed by the leader", async () => {
    const nodes = await group();
    await propose(nodes, 12);
    const last = nodes.get(1)!.storage.lastIndex();
    const victim = nodes.get(3)!;
    victim.up = false;
    await victim.storage.close();
    // Damage the record holding an entry in the middle of node 3's log.
    const name = (await victim.fs.list(DIR)).find((n) => n.endsWith(".log"))!;
    const seg = await readSegment(victim.fs, DIR, name, Number(name.slice(8, 24)));
    const hit = seg.records.find(
      (r) => r.record.kind === "save" && r.record.entries.some((e) => e.index === 6),
    )!;
    const bytes = victim.fs.readFile(`${DIR}/${name}`);
    bytes[hit.end - 1]! ^= 0xff;
    victim.fs.writeFile(`${DIR}/${name}`, bytes);

    const node = await startNode(3, victim.fs, 0);
    nodes.set(3, node);
    assert.ok(node.storage.recovery.damage !== undefined);
    assert.ok(node.storage.lastIndex() < 6);
    assert.deepEqual(node.raw.status().repair, { throughIndex: last });

    // It does not grant a vote while repairing, even to an up-to-date candidate.
    nodes.get(1)!.up = false;
    const candidate = nodes.get(2)!;
    candidate.raw.campaign();
    await stabilize(nodes);
    assert.notEqual(candidate.raw.status().role, "leader", "node 3 granted a vote while repairing");
    assert.ok(node.raw.status().repair !== undefined);

    // The old leader comes back; its entries heal node 3.
    nodes.get(1)!.up = true;
    for (let i = 0; i < 30 && node.raw.status().repair !== undefined; i++) {
      for (const n of nodes.values()) n.raw.tick();
      await stabilize(nodes);
    }
    await propose(nodes, 1);
    assert.equal(node.raw.status().repair, undefined, "the core healed");
    assert.ok(node.storage.lastIndex() >= last);
    assert.equal(
      node.storage.initialState().repair,
      undefined,
      "the storage stopped reporting repair",
    );
    for (const n of nodes.values()) await n.storage.close();
  });
});
