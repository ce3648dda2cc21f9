/**
 * What the gRPC peer transport reports, for logs and metrics: passed synchronously to
 * `GrpcPeerTransportOptions.onEvent`; a listener must be quick and what it throws is
 * ignored. Nothing is reported per message; `peer-rtt` comes once per ping (every
 * `pingIntervalMs` per peer).
 */
import type { MemberId } from "../replication/members.js";

export type PeerTransportEvent =
  | { readonly type: "peer-connected"; readonly to: MemberId; readonly address: string }
  | { readonly type: "peer-disconnected"; readonly to: MemberId; readonly reason: string }
  | {
      /** The peer refused this member's stream (FAILED_PRECONDITION: another cluster, removed...). */
      readonly type: "peer-refused";
      readonly to: MemberId;
      readonly code: number;
      readonly message: string;
    }
  | { readonly type: "peer-rtt"; readonly to: MemberId; readonly ms: number }
  | {
      /** An incoming call was refused (its status sent to the peer). */
      readonly type: "peer-call-refused";
      readonly path: string;
      readonly code: number;
      readonly message: string;
    };

export type PeerTransportEventListener = (event: PeerTransportEvent) => void;
