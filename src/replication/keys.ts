/**
 * The key space of a cluster member's store (docs/cluster.md, "Keys"; values in
 * docs/format/replicated-store.md). Every user key is stored as `0x01 ‖ key`; the
 * replicated store's own state lives under `0x00 ‖ name`. A user key therefore never
 * reaches an internal key, and user scans are confined to [0x01, 0x02).
 */

/** First byte of every stored user key. */
export const USER_PREFIX = 0x01;
/** First byte of every internal key. */
export const INTERNAL_PREFIX = 0x00;

const USER_END = new Uint8Array([USER_PREFIX + 1]);
const USER_START = new Uint8Array([USER_PREFIX]);

/** `0x00 "applied"`: the index and term of the last applied entry. */
export const APPLIED_KEY: Uint8Array = internalKey("applied");
/** `0x00 "members"`: the membership (members and removed IDs) as of the applied index. */
export const MEMBERS_KEY: Uint8Array = internalKey("members");

/**
 * `0x00 "alarm/" ‖ memberId:u64be ‖ type:u8`: an alarm etcd's Maintenance.Alarm raised
 * (value empty), present until deactivated (mvcc-request.ts, kind "alarm").
 */
export const ALARM_PREFIX: Uint8Array = internalKey("alarm/");

/** Just past every alarm key. */
export const ALARM_END: Uint8Array = internalKey("alarm0");

/** The key of alarm `type` of member `memberId`. */
export function alarmKey(memberId: bigint, type: number): Uint8Array {
  const out = Buffer.alloc(ALARM_PREFIX.length + 9);
  out.set(ALARM_PREFIX, 0);
  out.writeBigUInt64BE(BigInt.asUintN(64, memberId), ALARM_PREFIX.length);
  out[ALARM_PREFIX.length + 8] = type;
  return out;
}

/** The member and type of an alarm key; undefined for another key. */
export function alarmOfKey(key: Uint8Array): { memberId: bigint; type: number } | undefined {
  if (key.length !== ALARM_PREFIX.length + 9) return undefined;
  const b = Buffer.from(key.buffer, key.byteOffset, key.length);
  if (!b.subarray(0, ALARM_PREFIX.length).equals(ALARM_PREFIX)) return undefined;
  return {
    memberId: b.readBigUInt64BE(ALARM_PREFIX.length),
    type: b[ALARM_PREFIX.length + 8] ?? 0,
  };
}

function internalKey(name: string): Uint8Array {
  const text = Buffer.from(name, "latin1");
  const out = new Uint8Array(1 + text.length);
  out[0] = INTERNAL_PREFIX;
  out.set(text, 1);
  return out;
}

/** The stored form of user key `key`. */
export function storedKey(key: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(1 + key.length);
  out[0] = USER_PREFIX;
  out.set(key, 1);
  return out;
}

/** The user key of a stored user key (a view: no copy). REQUIRES stored[0] === USER_PREFIX. */
export function userKey(stored: Uint8Array): Uint8Array {
  return stored.subarray(1);
}

/**
 * The stored range of a user scan [gte, lt): [0x01 gte, 0x01 lt), with an absent bound
 * mapped to the start (0x01) or the end (0x02) of the user key space.
 */
export function storedRange(
  gte: Uint8Array | undefined,
  lt: Uint8Array | undefined,
): { gte: Uint8Array; lt: Uint8Array } {
  return {
    gte: gte === undefined ? USER_START : storedKey(gte),
    lt: lt === undefined ? USER_END : storedKey(lt),
  };
}
