/**
 * A member's alarms as a set kept in memory: a single node's (its alarms last until it
 * stops; NOSPACE is raised again by the next write that lacks space) and the state a
 * cluster member rebuilds from its log. Deactivating NOSPACE checks `hasSpace` first.
 */
import { AlarmType } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EtcdError } from "./etcd-errors.js";
import type { EtcdAlarm, EtcdAlarmBackend } from "./maintenance-service.js";

export class AlarmSet implements EtcdAlarmBackend {
  private alarms: EtcdAlarm[] = [];

  /** @param hasSpace false while the store is out of space or over its quota */
  constructor(private readonly hasSpace: () => boolean = () => true) {}

  list(): EtcdAlarm[] {
    return [...this.alarms];
  }

  /** True iff `alarm` is raised for any member. */
  has(alarm: AlarmType): boolean {
    return this.alarms.some((a) => a.alarm === alarm);
  }

  /** Raises `alarm` for `memberId` (once). */
  raise(memberId: bigint, alarm: AlarmType): void {
    if (this.alarms.some((a) => a.memberId === memberId && a.alarm === alarm)) return;
    this.alarms.push({ memberId, alarm });
    this.alarms.sort((a, b) =>
      a.memberId === b.memberId ? a.alarm - b.alarm : a.memberId < b.memberId ? -1 : 1,
    );
  }

  /** Clears `alarm` (NONE: all) of `memberId`; returns what was cleared. */
  clear(memberId: bigint, alarm: AlarmType): EtcdAlarm[] {
    const hit = (a: EtcdAlarm) =>
      a.memberId === memberId && (alarm === AlarmType.NONE || a.alarm === alarm);
    const cleared = this.alarms.filter(hit);
    this.alarms = this.alarms.filter((a) => !hit(a));
    return cleared;
  }

  async activate(memberId: bigint, alarm: AlarmType): Promise<void> {
    this.raise(memberId, alarm);
  }

  async deactivate(memberId: bigint, alarm: AlarmType): Promise<EtcdAlarm[]> {
    if ((alarm === AlarmType.NOSPACE || alarm === AlarmType.NONE) && !this.hasSpace()) {
      if (this.alarms.some((a) => a.memberId === memberId && a.alarm === AlarmType.NOSPACE))
        throw new EtcdError("NO_SPACE");
    }
    return this.clear(memberId, alarm);
  }
}
