/**
 * kv-engine serving etcd's API in this process for tests: a KvServer (lean path,
 * 127.0.0.1, an ephemeral port) with etcd's KV, Watch, Lease, Lock and Election services
 * registered over a LocalEtcdBackend on the real multi-version store (src/mvcc/) over a
 * KvStore on an in-memory file system.
 */

import { AlarmSet } from "../../src/etcd/alarms.js";
import { registerEtcdElection } from "../../src/etcd/election-service.js";
import { type EtcdKvServiceOptions, registerEtcdKv } from "../../src/etcd/kv-service.js";
import { registerEtcdLease } from "../../src/etcd/lease-service.js";
import { LocalEtcdBackend, type LocalEtcdBackendOptions } from "../../src/etcd/local-backend.js";
import { LocalEtcdMaintenance } from "../../src/etcd/local-maintenance.js";
import { registerEtcdLock } from "../../src/etcd/lock-service.js";
import { registerEtcdMaintenanceServices } from "../../src/etcd/maintenance-service.js";
import { grantingFrom } from "../../src/etcd/recipes/recipe-backend.js";
import { WatchHub, type WatchHubOptions } from "../../src/etcd/watch-hub.js";
import { type EtcdWatchServiceOptions, registerEtcdWatch } from "../../src/etcd/watch-service.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { LeaseTable } from "../../src/lease/lease-table.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
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
    /** The backend's lease clock (tests: an injected clock). */
    lessor?: LocalEtcdBackendOptions["lessor"];
  } = {},
): Promise<EtcdTestServer> {
  const fs = new MemoryFileSystem();
  const kv = await open("/db", { fs });
  const store = await MvccStore.open(kv);
  const ids = { clusterId: TEST_CLUSTER_ID, memberId: TEST_MEMBER_ID, raftTerm: 2n };
  const backend = new LocalEtcdBackend(store, {
    ids,
    leases: await LeaseTable.load(store),
    ...(options.lessor === undefined ? {} : { lessor: options.lessor, leaseCheckMs: 5 }),
  });
  const hub = new WatchHub(() => store, options.hub);
  let address = "";
  const maintenance = new LocalEtcdMaintenance({
    ids,
    clientAddress: () => address,
    admin: kv,
    fs,
    mvcc: () => store,
    alarms: new AlarmSet(),
  });
  const server = await KvServer.start(kv, {
    ...options.server,
    port: 0,
    registerServices: (s) => {
      registerEtcdKv(s, backend, options.service);
      const watch = { hub, hasLeader: () => true, ids: () => ids };
      registerEtcdWatch(s, watch, options.watch);
      registerEtcdLease(s, backend);
      const recipes = { kv: backend, watch, ...grantingFrom(backend) };
      registerEtcdLock(s, recipes);
      registerEtcdElection(s, recipes, options.service);
      registerEtcdMaintenanceServices(s, maintenance);
    },
  });
  address = server.address;
  return {
    server,
    address: server.address,
    store,
    backend,
    hub,
    async stop() {
      await server.shutdown(0);
      backend.close();
      hub.close();
      await store.close();
      await kv.close();
    },
  };
}
