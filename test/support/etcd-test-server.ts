/**
 * kv-engine serving etcd's API in this process for tests: a KvServer (lean path,
 * 127.0.0.1, an ephemeral port) with etcd's KV, Watch, Lock and Election services
 * registered over a LocalEtcdBackend on the real multi-version store (src/mvcc/) over a
 * KvStore on an in-memory file system.
 */

import { registerEtcdElection } from "../../src/etcd/election-service.js";
import { type EtcdKvServiceOptions, registerEtcdKv } from "../../src/etcd/kv-service.js";
import { LocalEtcdBackend } from "../../src/etcd/local-backend.js";
import { registerEtcdLock } from "../../src/etcd/lock-service.js";
import type { RecipeBackend } from "../../src/etcd/recipes/recipe-backend.js";
import { WatchHub, type WatchHubOptions } from "../../src/etcd/watch-hub.js";
import { type EtcdWatchServiceOptions, registerEtcdWatch } from "../../src/etcd/watch-service.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import type { LeaseLookup } from "../../src/mvcc/requests/index.js";
import type { Mvcc } from "../../src/mvcc/types.js";
import { KvServer, type KvServerOptions } from "../../src/server/index.js";

export const TEST_CLUSTER_ID = 0x1234n;
export const TEST_MEMBER_ID = 0x5678n;

export interface EtcdTestServer {
  readonly server: KvServer;
  /** "127.0.0.1:PORT". */
  readonly address: string;
  readonly store: Mvcc;
  readonly backend: LocalEtcdBackend;
  /** The Watch service's watchers. */
  readonly hub: WatchHub;
  stop(): Promise<void>;
}

export async function startEtcdTestServer(
  options: {
    service?: EtcdKvServiceOptions;
    server?: KvServerOptions;
    watch?: EtcdWatchServiceOptions;
    hub?: WatchHubOptions;
    /** The leases puts may name (default: none exists). */
    leases?: LeaseLookup;
    /** What a Lock or Campaign with lease 0 is given (default: none, it fails). */
    grantLease?: RecipeBackend["grantLease"];
  } = {},
): Promise<EtcdTestServer> {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const store = await MvccStore.open(kv);
  const ids = { clusterId: TEST_CLUSTER_ID, memberId: TEST_MEMBER_ID, raftTerm: 2n };
  const backend = new LocalEtcdBackend(store, {
    ids,
    ...(options.leases === undefined ? {} : { leases: options.leases }),
  });
  const hub = new WatchHub(() => store, options.hub);
  const server = await KvServer.start(kv, {
    ...options.server,
    port: 0,
    registerServices: (s) => {
      registerEtcdKv(s, backend, options.service);
      const watch = { hub, hasLeader: () => true, ids: () => ids };
      registerEtcdWatch(s, watch, options.watch);
      const recipes: RecipeBackend = {
        kv: backend,
        watch,
        ...(options.grantLease === undefined ? {} : { grantLease: options.grantLease }),
      };
      registerEtcdLock(s, recipes);
      registerEtcdElection(s, recipes, options.service);
    },
  });
  return {
    server,
    address: server.address,
    store,
    backend,
    hub,
    async stop() {
      await server.shutdown(0);
      hub.close();
      await store.close();
      await kv.close();
    },
  };
}
