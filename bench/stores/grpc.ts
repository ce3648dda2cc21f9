/**
 * A BenchStore that is a gRPC server in a child process of its own, called through
 * KvClient over loopback: the bench process runs only the client, so client and server do
 * not share an event loop. Shared by `kv-engine-grpc` (the real `kv-engine serve`) and
 * `grpc-floor` (bench/grpc-floor-server.ts).
 *
 * - The server is started in `open` and stopped (SIGTERM, SIGKILL after STOP_TIMEOUT_MS)
 *   in `close`; one untimed call (a get of a key outside the workload) connects the client
 *   first. Servers run under the bench process's node flags (so `--cpu-prof` profiles them
 *   too) and in its process group, which the harness kills after every run.
 * - Durability is the server's, chosen at start from the store's `sync`; a call that asks
 *   for another one throws rather than be measured with the wrong durability.
 * - `reopenFromTables` restarts a server that keeps its data on disk (there is no flush
 *   call over gRPC, so up to one write buffer stays in the log and is replayed into the
 *   memtable), then scans one row (so that the floor sorts its keys, untimed).
 * - Disk measures are the server's: `ioWriteBytes` reads its /proc/<pid>/io (summed over
 *   restarts), `tableFiles` counts the table files in its directory, `waitIdle` waits until
 *   that directory's listing stops changing.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { join } from "node:path";
import { KvClient } from "../../src/client/index.js";
import { parseFileName } from "../../src/version/file-names.js";
import { processWriteBytes } from "../lib/io.js";
import type { BenchStore, PutOptions, Row, StoreOpenOptions } from "./store.js";

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
/** The key of the connecting get: outside the workload's `key_%012d`. */
const CONNECT_KEY = "bench-connect";
/** `waitIdle`: the data directory must look the same for IDLE_STABLE_POLLS polls. */
const IDLE_POLL_MS = 100;
const IDLE_STABLE_POLLS = 3;

export interface ServerSpec {
  /** Arguments to node: the server's script and its options. */
  args: string[];
  /** The server's data directory, when it keeps its data on disk (restartable). */
  dataDir?: string;
}

interface ServerProcess {
  address: string;
  child: ChildProcess;
  /** The end of what the server wrote on stderr (for error messages). */
  stderr(): string;
}

/** Bytes of a server's stderr kept for error messages. */
const STDERR_KEEP = 2048;

/** Starts a server; resolves once it printed `... listening on HOST:PORT`. */
function startServer(args: readonly string[]): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...process.execArgv, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    err = (err + chunk).slice(-STDERR_KEEP);
  });
  const stderr = () => err.trim();
  return new Promise((resolve, reject) => {
    let out = "";
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`server (${args.join(" ")}) ${why}: ${stderr()}`));
    };
    const timer = setTimeout(
      () => fail(`not listening after ${START_TIMEOUT_MS / 1000} s`),
      START_TIMEOUT_MS,
    );
    child.once("error", (err) => fail(err.message));
    child.once("exit", (code, signal) => fail(`ended (${signal ?? `exit code ${code}`})`));
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (settled) return;
      out += chunk;
      const m = /listening on (\S+)\n/.exec(out);
      if (m === null) return;
      settled = true;
      clearTimeout(timer);
      resolve({ address: m[1]!, child, stderr });
    });
  });
}

/** SIGTERM, then SIGKILL after STOP_TIMEOUT_MS; rejects unless the server exited with 0. */
function stopServer({ child, stderr }: ServerProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        const how = signal ?? `exit code ${code}`;
        reject(new Error(`server ended with ${how} on SIGTERM: ${stderr()}`));
      }
    });
    child.kill("SIGTERM");
  });
}

async function connect(address: string): Promise<KvClient> {
  const client = new KvClient(address);
  await client.get(CONNECT_KEY);
  return client;
}

/** A fingerprint of a directory's files (names and sizes). */
function listing(dir: string): string {
  return fs
    .readdirSync(dir)
    .map((name) => `${name}:${fs.statSync(join(dir, name), { throwIfNoEntry: false })?.size}`)
    .sort()
    .join(",");
}

/** Opens a BenchStore over the server `spec` starts, with the durability of `options.sync`. */
export async function openServedBenchStore(
  spec: ServerSpec,
  options: StoreOpenOptions,
): Promise<BenchStore> {
  const { dataDir } = spec;
  let server = await startServer(spec.args);
  let client: KvClient;
  try {
    client = await connect(server.address);
  } catch (err) {
    await stopServer(server).catch(() => {});
    throw err;
  }
  /** write_bytes of the servers stopped by reopenFromTables. */
  let stoppedWriteBytes = 0;
  const stop = async () => {
    client.close();
    stoppedWriteBytes += processWriteBytes(server.child.pid ?? 0) ?? 0;
    await stopServer(server);
  };
  const durability = (opts: PutOptions) => {
    if (opts.sync !== options.sync) {
      throw new Error(`the server runs with sync ${options.sync}; a call asked for ${opts.sync}`);
    }
  };
  return {
    put(key, value, opts) {
      durability(opts);
      return client.put(key, value);
    },
    get: (key) => client.get(key),
    putBatch(keys, values, opts) {
      durability(opts);
      return client.write(keys.map((key, i) => ({ type: "put", key, value: values[i]! })));
    },
    deleteBatch(keys, opts) {
      durability(opts);
      return client.write(keys.map((key) => ({ type: "delete", key })));
    },
    scan: (start, limit): Promise<Row[]> => client.scanAll(start, undefined, limit),
    async reopenFromTables() {
      if (dataDir !== undefined) {
        await stop();
        server = await startServer(spec.args);
        client = await connect(server.address);
      }
      await client.scanAll(undefined, undefined, 1);
    },
    ...(dataDir === undefined
      ? {}
      : {
          tableFiles: () =>
            fs.readdirSync(dataDir).filter((name) => parseFileName(name)?.type === "table").length,
          async waitIdle(maxMs: number) {
            const until = Date.now() + maxMs;
            let last = listing(dataDir);
            let stable = 0;
            while (Date.now() < until) {
              await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
              const now = listing(dataDir);
              stable = now === last ? stable + 1 : 0;
              if (stable >= IDLE_STABLE_POLLS) return true;
              last = now;
            }
            return false;
          },
        }),
    ioWriteBytes() {
      const now = processWriteBytes(server.child.pid ?? 0);
      return now === undefined ? undefined : stoppedWriteBytes + now;
    },
    close: stop,
  };
}
