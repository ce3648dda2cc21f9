/**
 * The scenario runner behind test/raft/testdata/*.txt (after etcd-raft's rafttest
 * InteractionEnv): commands drive a Cluster by hand and print what happens, one line per
 * message, Ready section and log line. Commands:
 *
 *   add-nodes <n> voters=(..) [learners=(..)] [index=<i>] [prevote=..] [checkquorum=..]
 *             [read-only=safe|lease] [election-tick=..] [heartbeat-tick=..]
 *             [max-size-per-msg=..] [max-inflight-msgs=..] [max-inflight-bytes=..]
 *             [max-uncommitted-size=..] [disable-forwarding=true] [seed=<s> (default 1)]
 *   campaign <id>                 propose <id> <data>       read-index <id> <context>
 *   propose-conf-change <id> <addVoter|addLearner|removeNode> <node>
 *   transfer-leader <id> <to>     report-unreachable <id> <peer>
 *   report-snapshot <id> <peer> <finished|failure>
 *   tick <id> [n]                 tick-election <id>        tick-heartbeat <id>
 *   tick-all <id>..               tick each once per round until one changes role
 *   process-ready <id>..          one full Ready cycle each
 *   ready <id>                    ready() and send its messages; the Ready stays pending
 *   persist <id>                  persist the pending Ready, send the rest, apply, advance
 *   take-messages <id>            takeMessages() into the network
 *   deliver-msgs <id>.. [type=t]  drop-msgs <id>.. [type=t]
 *   stabilize [<id>..]            Readies and deliveries until nothing moves
 *   isolate <id>..                heal                       cut <from> <to>
 *   compact <id> <index>          snapshot at index (taken by the application), compact
 *   restart <id> [damage-from=i]  crash (the pending Ready is lost) and restart; with
 *                                 damage-from the log loses entries >= i and reports repair
 *   raft-state  raft-log <id>  status <id>  read-states <id>  applied <id>
 *   log-level none|info|debug
 */

import {
  describeBytes,
  describeEntry,
  describeMessage,
  describeSnapshot,
} from "../../../src/raft/describe.js";
import type { RaftLogger } from "../../../src/raft/logger.js";
import { describeConfState } from "../../../src/raft/membership.js";
import type { Ready } from "../../../src/raft/raw-node.js";
import type { ConfChangeType, ConfState, Message, NodeId } from "../../../src/raft/types.js";
import { Cluster, type NodeOptions } from "./cluster.js";
import { option, positional, type TestCommand } from "./data-driven.js";

type Level = "none" | "info" | "debug";

export class InteractionEnv {
  readonly cluster = new Cluster();
  private out: string[] = [];
  private indent = "";
  private level: Level = "info";
  /** Per node, the configuration after each applied index where it changed. */
  private readonly confHistory = new Map<NodeId, { index: number; cs: ConfState }[]>();
  private readonly electionTicks = new Map<NodeId, number>();
  private cuts = new Set<string>();
  private isolated = new Set<NodeId>();

  constructor() {
    this.cluster.tracer = (line) => this.print(line);
    this.cluster.dropFilter = (m) => this.isCut(m);
  }

  private print(line: string): void {
    if (this.level !== "none") this.out.push(this.indent + line);
  }

  private logger(): RaftLogger {
    const at = (lvl: Level, tag: string) => (msg: string) => {
      if (this.level === "none") return;
      if (lvl === "debug" && this.level !== "debug") return;
      this.print(`${tag} ${msg}`);
    };
    return {
      debug: at("debug", "DEBUG"),
      info: at("info", "INFO"),
      warn: at("info", "WARN"),
      error: at("info", "ERROR"),
    };
  }

  private isCut(m: Message): boolean {
    if (this.isolated.has(m.from) !== this.isolated.has(m.to)) return true;
    return this.cuts.has(`${m.from}->${m.to}`);
  }

  run(cmd: TestCommand): string {
    this.out = [];
    this.indent = "";
    this.dispatch(cmd);
    const text = this.out.join("\n");
    return text === "" ? "ok" : text;
  }

  private ids(cmd: TestCommand): NodeId[] {
    const ids = positional(cmd).map(Number);
    return ids.length > 0 ? ids : [...this.cluster.nodes.keys()];
  }

  private dispatch(cmd: TestCommand): void {
    const args = positional(cmd);
    const id = Number(args[0]);
    const c = this.cluster;
    switch (cmd.name) {
      case "add-nodes":
        this.addNodes(cmd);
        return;
      case "log-level":
        this.level = args[0] as Level;
        return;
      case "campaign":
        c.raw(id).campaign();
        return;
      case "propose":
        this.attempt(() => c.raw(id).propose(new TextEncoder().encode(args[1] ?? "")));
        return;
      case "propose-conf-change":
        this.attempt(() =>
          c.raw(id).proposeConfChange({
            type: args[1] as ConfChangeType,
            nodeId: Number(args[2]),
            context: new Uint8Array(0),
          }),
        );
        return;
      case "read-index":
        this.attempt(() => c.raw(id).readIndex(new TextEncoder().encode(args[1] ?? "")));
        return;
      case "transfer-leader":
        c.raw(id).transferLeader(Number(args[1]));
        return;
      case "report-unreachable":
        c.raw(id).reportUnreachable(Number(args[1]));
        return;
      case "report-snapshot":
        c.raw(id).reportSnapshot(Number(args[1]), args[2] === "failure" ? "failure" : "finished");
        return;
      case "tick":
        c.tick(id, args[1] === undefined ? 1 : Number(args[1]));
        return;
      case "tick-heartbeat":
        c.tick(id, c.get(id).options.heartbeatTick ?? 1);
        return;
      case "tick-election":
        this.tickElection(id);
        return;
      case "tick-all":
        this.tickAll(this.ids(cmd));
        return;
      case "process-ready":
        for (const n of this.ids(cmd)) {
          if (cmd.args.filter((a) => a.bare).length > 1) this.section(`> ${n} handling Ready`);
          this.processReady(n);
          this.indent = "";
        }
        return;
      case "ready":
        c.readyOnly(id, (rd) => this.printReady(rd));
        return;
      case "persist":
        this.finish(id);
        return;
      case "take-messages":
        for (const m of c.takeMessages(id)) this.print(describeMessage(m));
        return;
      case "deliver-msgs":
        for (const n of this.ids(cmd)) c.deliver(n, this.typeFilter(cmd));
        return;
      case "drop-msgs":
        for (const n of this.ids(cmd)) {
          for (const m of c.dropQueued(n, this.typeFilter(cmd)))
            this.print(`dropped ${describeMessage(m)}`);
        }
        return;
      case "stabilize":
        this.stabilize(this.ids(cmd));
        return;
      case "isolate":
        for (const n of this.ids(cmd)) this.isolated.add(n);
        return;
      case "heal":
        this.isolated.clear();
        this.cuts.clear();
        return;
      case "cut":
        this.cuts.add(`${args[0]}->${args[1]}`);
        return;
      case "compact":
        this.compact(id, Number(args[1]));
        return;
      case "restart":
        this.restart(id, option(cmd, "damage-from"));
        return;
      case "raft-state":
        for (const n of c.nodes.values()) {
          const s = n.node.status();
          const kind = s.config.voters.includes(s.id)
            ? "voter"
            : s.config.learners.includes(s.id)
              ? "learner"
              : "removed";
          const repair = s.repair === undefined ? "" : ` repair:${s.repair.throughIndex}`;
          this.print(`${s.id}: ${s.role} ${kind} term:${s.term} lead:${s.lead}${repair}`);
        }
        return;
      case "raft-log":
        this.raftLog(id);
        return;
      case "status":
        this.status(id);
        return;
      case "read-states":
        for (const rs of c.get(id).readStates)
          this.print(`index:${rs.index} context:${describeBytes(rs.context)}`);
        c.get(id).readStates.length = 0;
        return;
      case "applied": {
        const n = c.get(id);
        this.print(`applied:${n.appliedIndex} ${describeConfState(n.confState)}`);
        for (const h of n.history) {
          this.print("metadata" in h ? `snapshot ${describeSnapshot(h)}` : describeEntry(h));
        }
        return;
      }
      default:
        throw new Error(`unknown command ${cmd.name}`);
    }
  }

  private attempt(f: () => void): void {
    try {
      f();
    } catch (err) {
      const code = (err as { code?: string }).code;
      this.print(`error: ${code ?? ""} ${(err as Error).message}`.replace("  ", " "));
    }
  }

  private typeFilter(cmd: TestCommand): ((m: Message) => boolean) | undefined {
    const t = option(cmd, "type")?.[0];
    return t === undefined ? undefined : (m) => m.type === t;
  }

  private section(line: string): void {
    this.indent = "";
    this.print(line);
    this.indent = "  ";
  }

  private addNodes(cmd: TestCommand): void {
    const n = Number(positional(cmd)[0]);
    const voters = (option(cmd, "voters") ?? []).map(Number);
    const learners = (option(cmd, "learners") ?? []).map(Number);
    const index = Number(option(cmd, "index")?.[0] ?? 0);
    const bool = (k: string): boolean | undefined => {
      const v = option(cmd, k)?.[0];
      return v === undefined ? undefined : v === "true";
    };
    const num = (k: string): number | undefined => {
      const v = option(cmd, k)?.[0];
      return v === undefined ? undefined : Number(v);
    };
    const opts: Record<string, unknown> = { logger: this.logger(), seed: num("seed") ?? 1 };
    const set = (k: string, v: unknown) => {
      if (v !== undefined) opts[k] = v;
    };
    set("preVote", bool("prevote"));
    set("checkQuorum", bool("checkquorum"));
    const ro = option(cmd, "read-only")?.[0];
    set("readOnlyOption", ro === undefined ? undefined : ro === "lease" ? "leaseBased" : "safe");
    set("electionTick", num("election-tick"));
    set("heartbeatTick", num("heartbeat-tick"));
    set("maxSizePerMsg", num("max-size-per-msg"));
    set("maxInflightMsgs", num("max-inflight-msgs"));
    set("maxInflightBytes", num("max-inflight-bytes"));
    set("maxUncommittedEntriesSize", num("max-uncommitted-size"));
    set("maxCommittedSizePerReady", num("max-committed-size-per-ready"));
    set("disableProposalForwarding", bool("disable-forwarding"));
    const first = Math.max(0, ...this.cluster.nodes.keys()) + 1;
    const ids = Array.from({ length: n }, (_, i) => first + i);
    const cs = { voters, learners };
    this.cluster.add(ids, cs, opts as NodeOptions, index);
    for (const i of ids) {
      this.confHistory.set(i, [{ index, cs }]);
      this.electionTicks.set(i, (opts["electionTick"] as number | undefined) ?? 10);
    }
  }

  private tickElection(id: NodeId): void {
    const c = this.cluster;
    const e = this.electionTicks.get(id) ?? 10;
    if (c.raw(id).status().role === "leader") {
      c.tick(id, e);
      return;
    }
    // Until the node campaigns (the randomized timeout is below 2 * electionTick).
    const start = c.raw(id).status().role;
    const busy = c.raw(id).hasReady();
    for (let i = 0; i < 2 * e; i++) {
      c.tick(id);
      if (c.raw(id).status().role !== start || (!busy && c.raw(id).hasReady())) return;
    }
  }

  /** Ticks every node of `ids` once per round until one of them changes role. */
  private tickAll(ids: NodeId[]): void {
    const c = this.cluster;
    const roles = ids.map((id) => c.raw(id).status().role);
    const e = Math.max(...ids.map((id) => this.electionTicks.get(id) ?? 10));
    for (let i = 0; i < 2 * e; i++) {
      for (const id of ids) c.tick(id);
      if (ids.some((id, k) => c.raw(id).status().role !== roles[k])) return;
    }
  }

  private printReady(rd: Ready): void {
    this.print(`Ready mustSync=${rd.mustSync}:`);
    if (rd.softState !== undefined)
      this.print(`Lead:${rd.softState.lead} Role:${rd.softState.role}`);
    if (rd.hardState !== undefined) {
      const h = rd.hardState;
      this.print(`HardState term:${h.term} vote:${h.vote} commit:${h.commit}`);
    }
    if (rd.snapshot !== undefined) this.print(`Snapshot ${describeSnapshot(rd.snapshot)}`);
    this.list("Entries:", rd.entries.map(describeEntry));
    this.list("Messages:", rd.messages.map(describeMessage));
    this.list("MessagesAfterPersist:", rd.messagesAfterPersist.map(describeMessage));
    this.list("CommittedEntries:", rd.committedEntries.map(describeEntry));
    this.list(
      "ReadStates:",
      rd.readStates.map((rs) => `index:${rs.index} context:${describeBytes(rs.context)}`),
    );
  }

  private list(title: string, lines: string[]): void {
    if (lines.length === 0) return;
    this.print(title);
    for (const l of lines) this.print(l);
  }

  private processReady(id: NodeId): void {
    if (!this.cluster.raw(id).hasReady()) {
      this.print("no Ready");
      return;
    }
    this.cluster.readyOnly(id, (rd) => this.printReady(rd));
    this.finish(id);
  }

  private finish(id: NodeId): void {
    const n = this.cluster.get(id);
    const before = n.confState;
    this.cluster.finishReady(id);
    if (n.confState !== before) {
      this.confHistory.get(id)!.push({ index: n.appliedIndex, cs: n.confState });
    }
  }

  private stabilize(ids: NodeId[]): void {
    const c = this.cluster;
    for (let round = 0; round < 1000; round++) {
      let moved = false;
      for (const id of ids) {
        const n = c.get(id);
        if (n.pending !== undefined || !n.node.hasReady()) continue;
        this.section(`> ${id} handling Ready`);
        this.processReady(id);
        moved = true;
      }
      for (const id of ids) {
        if (!c.hasInflight([id])) continue;
        this.section(`> ${id} receiving messages`);
        c.deliver(id);
        moved = true;
      }
      if (!moved) break;
    }
    this.indent = "";
  }

  private compact(id: NodeId, index: number): void {
    const n = this.cluster.get(id);
    if (index > n.appliedIndex)
      throw new Error(`compact ${index}: node ${id} applied only ${n.appliedIndex}`);
    const hist = this.confHistory.get(id)!;
    let cs = hist[0]!.cs;
    for (const h of hist) if (h.index <= index) cs = h.cs;
    n.storage.createSnapshot(index, cs, new TextEncoder().encode(`snap@${index}`));
    n.storage.compact(index);
    this.raftLog(id);
  }

  private restart(id: NodeId, damageFrom: readonly string[] | undefined): void {
    const c = this.cluster;
    const n = c.get(id);
    const storage = n.storage.clone();
    if (damageFrom !== undefined) {
      const from = Number(damageFrom[0]);
      const last = storage.lastIndex();
      storage.truncateAfter(from - 1);
      storage.setRepair(last);
      this.print(`${id}: log damaged from index ${from}; entries ${from}..${last} lost`);
    }
    c.restart(id, storage);
  }

  private raftLog(id: NodeId): void {
    const s = this.cluster.get(id).storage;
    const first = s.firstIndex();
    const last = s.lastIndex();
    if (last < first) {
      this.print(`log is empty: first index=${first}, last index=${last}`);
      return;
    }
    for (const e of s.entries(first, last + 1, Number.MAX_SAFE_INTEGER))
      this.print(describeEntry(e));
  }

  private status(id: NodeId): void {
    const s = this.cluster.raw(id).status();
    this.print(
      `${s.id}: ${s.role} term:${s.term} vote:${s.vote} lead:${s.lead} commit:${s.commit} applied:${s.applied} ` +
        `log:[${s.firstIndex},${s.lastIndex}] ${describeConfState(s.config)}` +
        (s.repair === undefined ? "" : ` repair:${s.repair.throughIndex}`) +
        (s.leadTransferee === 0 ? "" : ` transferee:${s.leadTransferee}`),
    );
    if (s.progress === undefined) return;
    for (const [peer, p] of s.progress) {
      let line = `${peer}: ${p.state} match=${p.match} next=${p.next}`;
      if (p.isLearner) line += " learner";
      if (p.paused) line += " paused";
      if (p.pendingSnapshot > 0) line += ` pendingSnap=${p.pendingSnapshot}`;
      if (!p.recentActive) line += " inactive";
      if (p.inflightMessages > 0) line += ` inflight=${p.inflightMessages}`;
      this.print(line);
    }
  }
}
