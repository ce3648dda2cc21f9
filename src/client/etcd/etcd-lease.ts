/**
 * A granted lease kept alive by this client (EtcdClient.lease).
 *
 * Contract:
 * - Keep-alives go over a LeaseKeepAlive stream on the client's current endpoint: one
 *   request when the stream opens, then one every TTL/3 (not more often than every
 *   100 ms); each answer renews the lease until (the request's send time + the TTL it
 *   gives), a conservative view of the server's. A failed stream is opened again on the
 *   next endpoint (after 50 ms doubling to 1 s while it keeps failing).
 * - `lost` fires once, with a KvClientError as its reason: serverCode "NOT_FOUND" when
 *   the server answers that the lease is gone (expired, or revoked elsewhere), or
 *   "UNAVAILABLE" when no renewal came before the TTL ran out. Keep-alives then stop;
 *   keys attached to the lease are (or soon will be) deleted by the server.
 * - `revoke()` stops the keep-alives and revokes the lease (its keys are deleted);
 *   `release()` only stops the keep-alives (the lease expires after its TTL). Neither
 *   fires `lost`.
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import {
  type LeaseKeepAliveRequest,
  LeaseKeepAliveRequestSchema,
  type LeaseKeepAliveResponse,
  LeaseRevokeRequestSchema,
  LeaseTimeToLiveRequestSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { CallOptions, CallRunner } from "../call-runner.js";
import { KvClientError } from "../kv-client-error.js";
import { etcdMethods } from "./etcd-methods.js";
import { buffer } from "./etcd-types.js";

/** A lease's state as the server tells it (LeaseTimeToLive). */
export interface LeaseTimeToLive {
  id: bigint;
  /** Seconds left (-1: the lease is gone). */
  ttl: number;
  /** The TTL it was granted with. */
  grantedTtl: number;
  /** With `keys`: the keys attached to it. */
  keys: Buffer[];
}

const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 1000;

/** LeaseTimeToLive of `id`. */
export async function timeToLive(
  calls: CallRunner,
  id: bigint,
  options: CallOptions & { keys?: boolean } = {},
): Promise<LeaseTimeToLive> {
  const r = await calls.unary(
    "read",
    etcdMethods.LeaseTimeToLive,
    create(LeaseTimeToLiveRequestSchema, { ID: id, keys: options.keys === true }),
    options,
  );
  return {
    id: r.ID,
    ttl: Number(r.TTL),
    grantedTtl: Number(r.grantedTTL),
    keys: r.keys.map(buffer),
  };
}

/** LeaseRevoke of `id`. A lease that is gone already fails NOT_FOUND. */
export async function revokeLease(
  calls: CallRunner,
  id: bigint,
  options?: CallOptions,
): Promise<void> {
  await calls.unary(
    "write",
    etcdMethods.LeaseRevoke,
    create(LeaseRevokeRequestSchema, { ID: id }),
    options,
  );
}

export class Lease {
  private readonly lostController = new AbortController();
  /** Fires when the lease expired or could not be renewed in time (see the module comment). */
  readonly lost: AbortSignal = this.lostController.signal;
  /** The Date.now() time until which the lease is known alive (without further renewals). */
  aliveUntil: number;
  /** Renewals answered so far. */
  renewals = 0;
  private stopped = false;
  private expiry: NodeJS.Timeout | undefined;
  private stream: { cancel(): void } | undefined;

  /** `ttl`: seconds, as granted; `grantedAt`: the Date.now() time the grant was sent. */
  constructor(
    private readonly calls: CallRunner,
    readonly id: bigint,
    readonly ttl: number,
    grantedAt: number,
    private readonly onEnd: (lease: Lease) => void,
  ) {
    this.aliveUntil = grantedAt + ttl * 1000;
    this.armExpiry();
    void this.keepAlive();
  }

  /** The lease's state on the server. */
  timeToLive(options?: CallOptions & { keys?: boolean }): Promise<LeaseTimeToLive> {
    return timeToLive(this.calls, this.id, options);
  }

  /** Stops the keep-alives and revokes the lease (its keys are deleted). */
  async revoke(options?: CallOptions): Promise<void> {
    this.stop();
    await revokeLease(this.calls, this.id, options);
  }

  /** Stops the keep-alives; the lease expires after its TTL. */
  release(): void {
    this.stop();
  }

  /** True once keep-alives stopped (revoked, released, lost, or the client closed). */
  get ended(): boolean {
    return this.stopped;
  }

  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.expiry !== undefined) clearTimeout(this.expiry);
    this.stream?.cancel();
    this.onEnd(this);
  }

  private lose(code: status, serverCode: string, text: string): void {
    if (this.stopped) return;
    this.stop();
    this.lostController.abort(new KvClientError(code, text, { serverCode }));
  }

  private armExpiry(): void {
    if (this.expiry !== undefined) clearTimeout(this.expiry);
    this.expiry = setTimeout(
      () =>
        this.lose(
          status.UNAVAILABLE,
          "UNAVAILABLE",
          `lease ${this.id} was not renewed before its TTL (${this.ttl} s) ran out`,
        ),
      Math.max(0, this.aliveUntil - Date.now()),
    );
  }

  private async keepAlive(): Promise<void> {
    const calls = this.calls;
    let endpoint = calls.current;
    let pause = FIRST_PAUSE_MS;
    const request = create(LeaseKeepAliveRequestSchema, { ID: this.id });
    const every = Math.max(100, Math.floor((this.ttl * 1000) / 3));
    while (!this.stopped) {
      const context = { endpoint, path: etcdMethods.LeaseKeepAlive.path, kind: "read" as const };
      let call: ReturnType<
        typeof calls.transport.bidiStream<LeaseKeepAliveRequest, LeaseKeepAliveResponse>
      >;
      try {
        call = calls.transport.bidiStream(endpoint, etcdMethods.LeaseKeepAlive, context);
      } catch {
        this.stop(); // the client is closed
        return;
      }
      this.stream = call;
      const sent: number[] = [];
      const send = () => {
        if (call.write(request)) sent.push(Date.now());
      };
      send();
      const timer = setInterval(send, every);
      try {
        for await (const r of call) {
          const at = sent.shift() ?? Date.now();
          if (r.TTL <= 0n) {
            this.lose(
              status.NOT_FOUND,
              "NOT_FOUND",
              `lease ${this.id} expired or was revoked (the server no longer knows it)`,
            );
            return;
          }
          calls.current = endpoint;
          pause = FIRST_PAUSE_MS;
          this.renewals++;
          const until = at + Number(r.TTL) * 1000;
          if (until > this.aliveUntil) {
            this.aliveUntil = until;
            this.armExpiry();
          }
        }
      } catch {
        // The stream failed: again on the next endpoint.
      } finally {
        clearInterval(timer);
        call.cancel();
      }
      if (this.stopped) return;
      endpoint = calls.nextEndpoint(endpoint);
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(LONGEST_PAUSE_MS, pause * 2);
    }
  }
}
