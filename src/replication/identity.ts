/**
 * Cluster identity (docs/cluster.md, "Identity"). IDs are 52-bit hashes, so they are safe
 * integers and never 0:
 *
 * - the cluster ID hashes the token and the sorted initial members `name=peerAddress`;
 * - an initial member's ID hashes its name, peer address and the token, so every initial
 *   member computes every initial ID alike;
 * - a member added later gets the hash of its name, address and a random nonce, so a wiped
 *   node added back gets a new ID (a node that lost its data must not vote again under the
 *   ID it voted with before).
 */
import { createHash, randomBytes } from "node:crypto";
import { KvError } from "../errors.js";
import type { MemberId } from "./members.js";

/** The token used when none is given (etcd's default is "etcd-cluster"). */
export const DEFAULT_CLUSTER_TOKEN = "kv-engine-cluster";

/** One initial member, as `--initial-cluster name=host:port` names it. */
export interface InitialMember {
  readonly name: string;
  readonly peerAddress: string;
}

/** The first 52 bits of SHA-256 of the parts (joined with NUL), as a non-zero integer. */
function hash52(...parts: string[]): number {
  const digest = createHash("sha256").update(parts.join("\u0000")).digest();
  // 6 bytes = 48 bits, plus the top 4 bits of the 7th.
  const id = digest.readUIntBE(0, 6) * 16 + (digest[6]! >> 4);
  return id === 0 ? 1 : id;
}

export function clusterIdOf(token: string, initial: readonly InitialMember[]): number {
  const names = initial.map((m) => `${m.name}=${m.peerAddress}`).sort();
  return hash52("kv-engine/cluster", token, names.join(","));
}

export function initialMemberId(token: string, m: InitialMember): MemberId {
  return hash52("kv-engine/member", m.name, m.peerAddress, token);
}

/** An ID for a member added to a running cluster; `nonce` defaults to 16 random bytes. */
export function newMemberId(m: InitialMember, nonce?: string): MemberId {
  return hash52(
    "kv-engine/added-member",
    m.name,
    m.peerAddress,
    nonce ?? randomBytes(16).toString("hex"),
  );
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ADDRESS = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;

/** Throws INVALID_ARGUMENT unless `name` is a member name (letters, digits, `._-`, <= 64). */
export function checkMemberName(name: unknown, what: string): string {
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `${what} must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/** Throws INVALID_ARGUMENT unless `address` is `host:port` with a port in 1..65535. */
export function checkAddress(address: unknown, what: string): string {
  const m = typeof address === "string" ? ADDRESS.exec(address) : null;
  const port = m === null ? 0 : Number(m[2]);
  if (m === null || port < 1 || port > 65535) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `${what} must be host:port, got ${JSON.stringify(address)}`,
    );
  }
  return address as string;
}

/**
 * Parses `n1=host:port,n2=host:port,...` (the `--initial-cluster` flag; an address may
 * carry etcd's `http://` or `https://`, as `etcdctl member add` prints it: dropped).
 * Throws INVALID_ARGUMENT for a malformed list, a duplicate name or a duplicate address.
 */
export function parseInitialCluster(text: string): InitialMember[] {
  if (typeof text !== "string" || text.trim() === "") {
    throw new KvError("INVALID_ARGUMENT", "the initial cluster must list at least one member");
  }
  const out = text.split(",").map((part, i) => {
    const eq = part.indexOf("=");
    if (eq < 0) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `initial cluster entry ${i + 1} (${JSON.stringify(part)}) must be name=host:port`,
      );
    }
    return {
      name: checkMemberName(part.slice(0, eq).trim(), `initial cluster entry ${i + 1}'s name`),
      peerAddress: checkAddress(
        part
          .slice(eq + 1)
          .trim()
          .replace(/^https?:\/\//, ""),
        `initial cluster entry ${i + 1}'s address`,
      ),
    };
  });
  checkInitialCluster(out);
  return out;
}

/** Throws INVALID_ARGUMENT for an empty list, a duplicate name or a duplicate address. */
export function checkInitialCluster(members: readonly InitialMember[]): void {
  if (!Array.isArray(members) || members.length === 0) {
    throw new KvError("INVALID_ARGUMENT", "the initial cluster must list at least one member");
  }
  const names = new Set<string>();
  const addresses = new Set<string>();
  for (const m of members) {
    checkMemberName(m.name, "an initial member's name");
    checkAddress(m.peerAddress, `member ${m.name}'s peer address`);
    if (names.has(m.name))
      throw new KvError(
        "INVALID_ARGUMENT",
        `member name ${m.name} appears twice in the initial cluster`,
      );
    if (addresses.has(m.peerAddress)) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `peer address ${m.peerAddress} appears twice in the initial cluster`,
      );
    }
    names.add(m.name);
    addresses.add(m.peerAddress);
  }
}
