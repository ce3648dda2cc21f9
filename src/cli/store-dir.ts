/**
 * The store an offline command works on, given a data directory DIR: DIR itself for a
 * single-node store; for a cluster member's data directory (DIR/member.json and no
 * DIR/CURRENT: docs/cluster.md, "Layout") the store inside it, the directory DIR/STORE
 * names ("store" when absent). The command says so on stderr, so that the output stays
 * what it is for a plain store. The member's Raft log and snapshots are not looked at.
 * A member's store holds its user keys behind a prefix byte (src/replication/keys.ts),
 * beside its internal keys: commands that take keys or write a copy use `member`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FIRST_STORE, STORE_FILE } from "../replication/node-dir.js";
import { CLUSTER_MEMBER_FILE, CURRENT_FILE } from "../version/file-names.js";

/** The member's name in DIR/member.json, or undefined when unreadable. */
function memberName(dir: string): string | undefined {
  try {
    const o = JSON.parse(readFileSync(join(dir, CLUSTER_MEMBER_FILE), "utf8")) as {
      name?: unknown;
    };
    return typeof o.name === "string" ? o.name : undefined;
  } catch {
    return undefined;
  }
}

/** A store directory, and whether it is a cluster member's store. */
export interface StoreDir {
  dir: string;
  /** The member's name when `dir` is a cluster member's store ("" when unnamed). */
  member: string | undefined;
}

/**
 * `dir`, or the store directory inside it when it is a cluster member's data directory
 * (then a line on stderr, prefixed "kv-engine COMMAND: ", names both). A STORE file naming
 * something else than "store" or "store-N" is not followed (`dir` is returned, and the
 * command reports what it finds there).
 */
export function storeDirOf(dir: string, command: string): StoreDir {
  if (existsSync(join(dir, CURRENT_FILE)) || !existsSync(join(dir, CLUSTER_MEMBER_FILE))) {
    return { dir, member: undefined };
  }
  let name = FIRST_STORE;
  try {
    name = readFileSync(join(dir, STORE_FILE), "utf8").trim();
  } catch {
    // No STORE file: the first store.
  }
  if (name !== FIRST_STORE && !/^store-[0-9]+$/.test(name)) return { dir, member: undefined };
  const store = join(dir, name);
  const member = memberName(dir) ?? "";
  process.stderr.write(
    `kv-engine ${command}: ${dir} is the data directory of cluster member ${member || "(unnamed)"}: using its store ${store}\n`,
  );
  return { dir: store, member };
}
