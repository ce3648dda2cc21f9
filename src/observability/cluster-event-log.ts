/**
 * A cluster member's events as log lines (pino), one per election, leader change,
 * membership change, snapshot (taken, sent, installed), refused peer, removal and failure;
 * nothing per request or per message. Fields are listed in docs/metrics.md ("Logs").
 * IDs are printed in hex, as the CLI prints them.
 */
import type { Logger } from "pino";
import type { ReplicationEvent, ReplicationEventListener } from "../replication/events.js";

const hex = (id: number) => id.toString(16);
const round = (ms: number) => Math.round(ms * 10) / 10;

export function clusterEventLogger(logger: Logger): ReplicationEventListener {
  return (e: ReplicationEvent) => {
    switch (e.type) {
      case "election":
        logger.info(
          { event: "election", term: e.term, preVote: e.preVote },
          e.preVote ? "pre-election started" : "election started",
        );
        break;
      case "leader":
        logger.info(
          { event: "leader", term: e.term, leader: hex(e.leader), previous: hex(e.previous) },
          e.leader === 0 ? "leader lost" : `leader is ${hex(e.leader)}`,
        );
        break;
      case "membership":
        logger.info(
          {
            event: "membership",
            index: e.index,
            change: e.change,
            member: hex(e.member),
            name: e.name,
            applied: e.applied,
            voters: e.voters.map(hex),
            learners: e.learners.map(hex),
          },
          e.applied ? `membership change ${e.change} ${e.name}` : "membership change refused",
        );
        break;
      case "snapshot-created":
        logger.info(
          {
            event: "snapshot-created",
            index: e.index,
            term: e.term,
            files: e.files,
            bytes: e.bytes,
            compactedTo: e.compactedTo,
            ms: round(e.durationMs),
          },
          "snapshot taken",
        );
        break;
      case "snapshot-sent": {
        const fields = {
          event: "snapshot-sent",
          to: hex(e.to),
          index: e.index,
          bytes: e.bytes,
          ok: e.ok,
          err: e.message,
          ms: round(e.durationMs),
        };
        if (e.ok) logger.info(fields, "snapshot sent");
        else logger.warn(fields, "snapshot stream failed");
        break;
      }
      case "snapshot-installed":
        logger.info(
          {
            event: "snapshot-installed",
            from: hex(e.from),
            index: e.index,
            term: e.term,
            bytes: e.bytes,
            ms: round(e.durationMs),
          },
          "snapshot installed",
        );
        break;
      case "peer-refused":
        logger.warn({ event: "peer-refused", from: hex(e.from), reason: e.reason }, "peer refused");
        break;
      case "removed":
        logger.warn(
          { event: "removed", index: e.index },
          "this member was removed from the cluster",
        );
        break;
      case "failed":
        logger.error(
          { event: "failed", err: e.message },
          "member stopped after a failure: restart it",
        );
        break;
    }
  };
}
