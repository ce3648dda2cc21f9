/**
 * etcd's error texts (the server's words, which EtcdClient passes on) said in ours, for
 * the one-line failure a command prints: what happened and whether a write may have been
 * applied. The code and endpoint before the text are kept ("NOT_FOUND: HOST:PORT: ...").
 */

/** etcd's message -> ours; longer messages first where one starts another. */
const OUR_WORDS: readonly (readonly [string, string])[] = [
  [
    "etcdserver: mvcc: required revision has been compacted",
    "that revision was compacted: its history is gone (ask for a later revision)",
  ],
  [
    "etcdserver: mvcc: required revision is a future revision",
    "that revision is past the store's current revision",
  ],
  [
    "etcdserver: mvcc: database space exceeded",
    "the store is full (NOSPACE alarm): nothing was written; compact the history, defragment, then 'kv-engine alarm disarm'",
  ],
  [
    "etcdserver: requested lease not found",
    "no such lease (it expired or was revoked); nothing was done",
  ],
  ["etcdserver: lease already exists", "a lease with that ID exists already; nothing was done"],
  [
    "etcdserver: duplicate key given in txn request",
    "a transaction branch writes the same key twice (refused); nothing was done",
  ],
  [
    "etcdserver: too many operations in txn request",
    "the transaction has more ops than the server allows (its --max-txn-ops); nothing was done",
  ],
  [
    "etcdserver: request timed out",
    "the server timed out waiting for the write to apply: it may or may not have been applied; read before retrying",
  ],
  [
    "etcdserver: leader changed",
    "the leader changed while the write was in flight: it may or may not have been applied; read before retrying",
  ],
  [
    "etcdserver: no leader",
    "the cluster has no leader (an election, or a majority down); nothing was done",
  ],
  ["etcdserver: member not found", "no such member; nothing was done"],
  [
    "etcdserver: can only promote a learner member which is in sync with leader",
    "the learner has not caught up with the leader yet (or has not started): promote it later",
  ],
  ["etcdserver: can only promote a learner member", "that member is a voter already"],
  [
    "etcdserver: too many learner members in cluster",
    "the cluster has a learner already (one at a time): promote or remove it first; nothing was done",
  ],
  [
    "etcdserver: Peer URLs already exists",
    "a member has that peer address already; nothing was done",
  ],
  ["etcdserver: key not found", "the key is absent"],
];

/** `message` with etcd's text replaced by ours (unchanged when none is known). */
export function inOurWords(message: string): string {
  for (const [theirs, ours] of OUR_WORDS) {
    const at = message.indexOf(theirs);
    if (at >= 0) return message.slice(0, at) + ours + message.slice(at + theirs.length);
  }
  return message;
}
