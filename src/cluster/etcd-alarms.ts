/**
 * A cluster's alarms (etcd's Maintenance.Alarm) through the Raft log: activating or
 * deactivating proposes an AlarmRequest (mvcc-request.ts kind "alarm") that every member
 * applies, so every member lists the same alarms at the same applied index, and they
 * survive restarts and travel in snapshots. `list` reads what this member applied;
 * `recent` (the quota check, before every write) keeps that for ALARM_CACHE_MS: a member's
 * writes see an alarm raised or cleared through another member within that time, its
 * own changes at once.
 */
import { create } from "@bufbuild/protobuf";
import { sortAlarms } from "../etcd/alarms.js";
import type { EtcdCallOptions } from "../etcd/etcd-backend.js";
import type { EtcdAlarm, EtcdAlarmBackend } from "../etcd/maintenance-service.js";
import {
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  type AlarmType,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { ReplicatedStore } from "../replication/replicated-store.js";

/** How long `list` answers from what it read last. */
export const ALARM_CACHE_MS = 100;

export class ReplicatedEtcdAlarms implements EtcdAlarmBackend {
  private cached: { at: number; alarms: Promise<EtcdAlarm[]> } | undefined;

  constructor(private readonly store: ReplicatedStore) {}

  async list(): Promise<EtcdAlarm[]> {
    const list = await this.store.alarms();
    return sortAlarms(list.map((a) => ({ memberId: a.memberId, alarm: a.type })));
  }

  recent(): Promise<EtcdAlarm[]> {
    const now = performance.now();
    if (this.cached === undefined || now - this.cached.at > ALARM_CACHE_MS) {
      const alarms = this.list();
      alarms.catch(() => {
        if (this.cached?.alarms === alarms) this.cached = undefined;
      });
      this.cached = { at: now, alarms };
    }
    return this.cached.alarms.then((a) => [...a]);
  }

  async activate(memberId: bigint, alarm: AlarmType, options?: EtcdCallOptions): Promise<void> {
    await this.propose(AlarmRequest_AlarmAction.ACTIVATE, memberId, alarm, options);
  }

  async deactivate(
    memberId: bigint,
    alarm: AlarmType,
    options?: EtcdCallOptions,
  ): Promise<EtcdAlarm[]> {
    const before = await this.list();
    await this.propose(AlarmRequest_AlarmAction.DEACTIVATE, memberId, alarm, options);
    const after = await this.list();
    return before.filter(
      (a) => !after.some((b) => b.memberId === a.memberId && b.alarm === a.alarm),
    );
  }

  private async propose(
    action: AlarmRequest_AlarmAction,
    memberId: bigint,
    alarm: AlarmType,
    options: EtcdCallOptions | undefined,
  ): Promise<void> {
    const signal = options?.signal;
    await this.store.request(
      { kind: "alarm", request: create(AlarmRequestSchema, { action, memberID: memberId, alarm }) },
      signal === undefined ? {} : { signal },
    );
    this.cached = undefined;
  }
}
