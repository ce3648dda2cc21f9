/**
 * A single node's alarms: a set kept in memory (they last until the server stops; NOSPACE
 * is raised again by the next write over the quota or out of space). As etcd's, a
 * deactivation clears the alarm whatever the space: if the store is still full, the next
 * write raises it again.
 */
import { AlarmType } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdAlarm, EtcdAlarmBackend } from "./maintenance-service.js";

/** Sorted by member, then type. */
export function sortAlarms(alarms: EtcdAlarm[]): EtcdAlarm[] {
  return alarms.sort((a, b) =>
    a.memberId === b.memberId ? a.alarm - b.alarm : a.memberId < b.memberId ? -1 : 1,
  );
}

/** True iff `a` is an alarm of `memberId` that a deactivation of `alarm` clears. */
export function clearedBy(a: EtcdAlarm, memberId: bigint, alarm: AlarmType): boolean {
  return a.memberId === memberId && (alarm === AlarmType.NONE || a.alarm === alarm);
}

export class AlarmSet implements EtcdAlarmBackend {
  private alarms: EtcdAlarm[] = [];

  async list(): Promise<EtcdAlarm[]> {
    return [...this.alarms];
  }

  recent(): Promise<EtcdAlarm[]> {
    return this.list();
  }

  async activate(memberId: bigint, alarm: AlarmType): Promise<void> {
    if (this.alarms.some((a) => a.memberId === memberId && a.alarm === alarm)) return;
    this.alarms.push({ memberId, alarm });
    sortAlarms(this.alarms);
  }

  async deactivate(memberId: bigint, alarm: AlarmType): Promise<EtcdAlarm[]> {
    const cleared = this.alarms.filter((a) => clearedBy(a, memberId, alarm));
    this.alarms = this.alarms.filter((a) => !clearedBy(a, memberId, alarm));
    return cleared;
  }
}
