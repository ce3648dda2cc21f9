/**
 * The loopback floor of a serial call: the round trip of a few bytes between two Node
 * processes over a node:net socket on 127.0.0.1, one message in flight, the receiver
 * echoing each 'data' event at once. No gRPC, no HTTP/2, no work: what remains is the
 * kernel's loopback path and the wake-up of a process sleeping in epoll.
 *
 * Why the cluster benchmarks print it: a lone linearizable read waits for two round
 * trips in sequence (client to leader and back, leader to a follower and back, the
 * ReadIndex heartbeat round) in any Raft implementation, so twice this figure is a
 * floor under the serial get row of every system measured in the same run.
 *
 * Run as a script with `--echo-server`, this file is the echoing child.
 */
import { fork } from "node:child_process";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { nowNs } from "../lib/stats.js";

const SELF = fileURLToPath(import.meta.url);
const MESSAGE_BYTES = 64;

export interface EchoFloor {
  /** Round trips measured. */
  trips: number;
  p50Us: number;
  meanUs: number;
}

/** Measures serial echo round trips for `durationMs` (after `warmupTrips` unmeasured). */
export async function measureEchoFloor(durationMs: number, warmupTrips = 1000): Promise<EchoFloor> {
  const child = fork(SELF, ["--echo-server"], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  let socket: net.Socket | undefined;
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once("message", (m) => resolve(Number(m)));
      child.once("error", reject);
      child.once("close", (code) => reject(new Error(`echo server ended (${code})`)));
    });
    const s = net.connect({ host: "127.0.0.1", port, noDelay: true });
    socket = s;
    await new Promise<void>((resolve, reject) => {
      s.once("connect", resolve);
      s.once("error", reject);
    });
    const message = Buffer.alloc(MESSAGE_BYTES, 1);
    const samples: number[] = [];
    await new Promise<void>((resolve, reject) => {
      let sentAt = 0;
      let received = 0;
      let done = 0;
      let trips = 0;
      const send = () => {
        sentAt = nowNs();
        s.write(message);
      };
      s.on("error", reject);
      s.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received < MESSAGE_BYTES) return;
        received -= MESSAGE_BYTES;
        const ns = nowNs() - sentAt;
        if (++trips === warmupTrips) done = nowNs() + durationMs * 1e6;
        else if (trips > warmupTrips) {
          samples.push(ns);
          if (nowNs() >= done) return resolve();
        }
        send();
      });
      send();
    });
    samples.sort((a, b) => a - b);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    return {
      trips: samples.length,
      p50Us: (samples[samples.length >> 1] ?? 0) / 1e3,
      meanUs: mean / 1e3,
    };
  } finally {
    socket?.destroy();
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  }
}

if (process.argv[1] === SELF && process.argv[2] === "--echo-server") {
  const server = net.createServer((c) => {
    c.setNoDelay(true);
    c.on("data", (chunk) => c.write(chunk));
    c.on("error", () => c.destroy());
  });
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    process.send?.(typeof address === "object" && address !== null ? address.port : 0);
  });
  process.on("disconnect", () => process.exit(0));
}
