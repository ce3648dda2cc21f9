/**
 * What most Watch tests start with: kv-engine's etcd test server (etcd-test-server.ts),
 * a KV client and one watch stream to it, all stopped when the test ends.
 */
import type { TestContext } from "node:test";
import { EtcdGrpcClient } from "./etcd-grpc-client.js";
import { type EtcdTestServer, startEtcdTestServer } from "./etcd-test-server.js";
import { EtcdWatchClient } from "./etcd-watch-client.js";

export interface Watched {
  readonly s: EtcdTestServer;
  readonly kv: EtcdGrpcClient;
  readonly w: EtcdWatchClient;
}

export async function startWatched(
  t: TestContext,
  options: Parameters<typeof startEtcdTestServer>[0] = {},
): Promise<Watched> {
  const s = await startEtcdTestServer(options);
  const kv = new EtcdGrpcClient(s.address);
  const w = new EtcdWatchClient(s.address).open();
  t.after(async () => {
    w.close();
    kv.close();
    await s.stop();
  });
  return { s, kv, w };
}

/** Another watch stream to `address`, closed when the test ends. */
export function watchStream(t: TestContext, address: string): EtcdWatchClient {
  const w = new EtcdWatchClient(address).open();
  t.after(() => w.close());
  return w;
}
