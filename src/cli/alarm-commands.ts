/**
 * `kv-engine alarm list|disarm`: etcd's Maintenance.Alarm, for kv-engine and etcd alike.
 */
import { create } from "@bufbuild/protobuf";
import type { EtcdClient } from "../client/etcd/etcd-client.js";
import {
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  AlarmType,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EXIT_OK, UsageError } from "./command.js";
import { etcdAdminMethods } from "./etcd-admin-methods.js";
import {
  ETCD_COMMON_USAGE,
  expectArgs,
  hexId as hex,
  line,
  runEtcdCommand,
} from "./etcd-command.js";

const ALARM_USAGE = `Usage: kv-engine alarm ACTION [options]

Actions (etcd's Maintenance API):
  list                      the alarms raised: "memberID:ID alarm:NOSPACE" per line
  disarm                    clear every alarm raised (writes resume; NOSPACE is raised
                            again by the next write while the store is still full)
`;

async function alarms(
  client: EtcdClient,
  action: AlarmRequest_AlarmAction,
  memberID = 0n,
  alarm = AlarmType.NONE,
) {
  const r = await client.calls.unary(
    action === AlarmRequest_AlarmAction.GET ? "read" : "write",
    etcdAdminMethods.Alarm,
    create(AlarmRequestSchema, { action, memberID, alarm }),
    undefined,
  );
  return r.alarms;
}

export function alarmCommand(argv: string[]): Promise<number> {
  return runEtcdCommand("alarm", `${ALARM_USAGE}\n${ETCD_COMMON_USAGE}`, argv, {}, async (ctx) => {
    const [action, ...rest] = ctx.args;
    if (action !== "list" && action !== "disarm") {
      throw new UsageError(
        action === undefined
          ? "give an action: list or disarm"
          : `unknown action '${action}' (list, disarm)`,
      );
    }
    expectArgs(rest, []);
    const list = await alarms(ctx.client, AlarmRequest_AlarmAction.GET);
    if (action === "disarm") {
      for (const a of list)
        await alarms(ctx.client, AlarmRequest_AlarmAction.DEACTIVATE, a.memberID, a.alarm);
    }
    const shown = list.map((a) => ({
      memberId: hex(a.memberID),
      alarm: AlarmType[a.alarm] ?? String(a.alarm),
    }));
    if (ctx.json) line(JSON.stringify(action === "list" ? { alarms: shown } : { disarmed: shown }));
    else if (action === "disarm" && shown.length === 0) line("no alarm was raised");
    else
      for (const a of shown)
        line(`${action === "disarm" ? "disarmed " : ""}memberID:${a.memberId} alarm:${a.alarm}`);
    return EXIT_OK;
  });
}
