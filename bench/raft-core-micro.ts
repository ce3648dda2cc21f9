/**
 * Raft core micro benchmark (not a test, not part of `npm run bench`): three RawNodes on
 * MemoryStorage in one process, messages handed over directly, every Ready "persisted" at
 * once (no disk, no codec). Proposals of 100 bytes are kept `--inflight` at a time; the
 * time spent inside the leader's RawNode calls (propose, step, hasReady, ready, advance,
 * takeMessages) is summed with process.hrtime.bigint around each call and divided by the
 * entries committed (wall time: on a busy machine, preemption inflates it; the process CPU
 * time of the whole run, all three nodes and the loop included, is printed beside it).
 * The followers' time is reported apart. The raft_propose scenario of
 * `npm run bench` measures the same with durable storage and a transport.
 *
 *   node dist/bench/raft-core-micro.js                      # 1 and 64 in flight
 *   node dist/bench/raft-core-micro.js --inflight 64 --n 200000
 */
import { parseArgs } from "node:util";
import { MemoryStorage } from "../src/raft/memory-storage.js";
import { RawNode } from "../src/raft/raw-node.js";
import type { Message, NodeId } from "../src/raft/types.js";

interface Member {
  node: RawNode;
  storage: MemoryStorage;
  inbox: Message[];
}

function run(
  inflight: number,
  n: number,
): { leaderNs: number; followerNs: number; commits: number; cpuUs: number } {
  const ids = [1, 2, 3];
  const members = new Map<NodeId, Member>();
  for (const id of ids) {
    const storage = new MemoryStorage({ confState: { voters: ids, learners: [] } });
    members.set(id, { node: new RawNode({ id, storage }), storage, inbox: [] });
  }
  const leader = members.get(1)!;
  const send = (msgs: readonly Message[]) => {
    for (const m of msgs) members.get(m.to)!.inbox.push(m);
  };
  let leaderNs = 0n;
  let followerNs = 0n;
  let committed = 0;
  let proposed = 0;
  const data = new Uint8Array(100);

  const cycle = (m: Member, isLeader: boolean): void => {
    let t = process.hrtime.bigint();
    const inbox = m.inbox;
    m.inbox = [];
    for (const msg of inbox) m.node.step(msg);
    if (!m.node.hasReady()) {
      if (isLeader) leaderNs += process.hrtime.bigint() - t;
      else followerNs += process.hrtime.bigint() - t;
      return;
    }
    const rd = m.node.ready();
    let spent = process.hrtime.bigint() - t;
    send(rd.messages);
    m.storage.save(rd);
    send(rd.messagesAfterPersist);
    if (isLeader) for (const e of rd.committedEntries) if (e.data.length > 0) committed++;
    t = process.hrtime.bigint();
    m.node.advance();
    spent += process.hrtime.bigint() - t;
    if (isLeader) leaderNs += spent;
    else followerNs += spent;
  };

  leader.node.campaign();
  for (let i = 0; i < 50 && leader.node.status().role !== "leader"; i++) {
    for (const id of ids) cycle(members.get(id)!, false);
  }
  if (leader.node.status().role !== "leader") throw new Error("no leader");
  leaderNs = 0n;
  followerNs = 0n;
  committed = 0;
  const cpu = process.cpuUsage();
  while (committed < n) {
    const t = process.hrtime.bigint();
    while (proposed - committed < inflight && proposed < n) {
      leader.node.propose(data);
      proposed++;
    }
    leaderNs += process.hrtime.bigint() - t;
    cycle(leader, true);
    cycle(members.get(2)!, false);
    cycle(members.get(3)!, false);
  }
  const used = process.cpuUsage(cpu);
  return {
    leaderNs: Number(leaderNs),
    followerNs: Number(followerNs),
    commits: committed,
    cpuUs: used.user + used.system,
  };
}

const { values } = parseArgs({
  options: {
    inflight: { type: "string" },
    n: { type: "string", default: "100000" },
    rounds: { type: "string", default: "5" },
  },
});
const n = Number(values.n);
const windows = values.inflight === undefined ? [1, 64] : [Number(values.inflight)];
for (const w of windows) {
  run(w, Math.min(n, 20_000)); // warm up
  const perEntry: number[] = [];
  const followers: number[] = [];
  const cpuPerEntry: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const res = run(w, n);
    perEntry.push(res.leaderNs / res.commits);
    followers.push(res.followerNs / res.commits / 2);
    cpuPerEntry.push(res.cpuUs / res.commits);
  }
  cpuPerEntry.sort((a, b) => a - b);
  perEntry.sort((a, b) => a - b);
  followers.sort((a, b) => a - b);
  const mid = (a: number[]) => a[a.length >> 1]!;
  console.log(
    `inflight ${w}: leader ${(mid(perEntry) / 1000).toFixed(2)} us/entry ` +
      `(min ${(perEntry[0]! / 1000).toFixed(2)}), follower ${(mid(followers) / 1000).toFixed(2)} us/entry; ` +
      `process CPU, all three nodes and the loop: ${mid(cpuPerEntry).toFixed(2)} us/entry`,
  );
}
