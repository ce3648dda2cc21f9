/**
 * A TCP proxy for one directed link (e.g. member A dialling member B's peer port through
 * the peer transport's dial override), so that tests partition a cluster without root:
 *
 * - `cut("reset")` (default): every connection is destroyed and new ones are closed at
 *   once (the dialler sees a refused or reset connection at once);
 * - `cut("blackhole")`: connections stay open but every byte is dropped, both ways, and
 *   new connections are accepted and ignored (as a network that loses packets: the
 *   dialler notices only by timeouts);
 * - `heal()`: forwarding resumes for new connections; blackholed ones are destroyed
 *   (their streams lost bytes), so the dialler reconnects;
 * - `delay(ms)`: each chunk is forwarded `ms` later, order kept.
 *
 * A one-way partition of A and B is the cut of the proxy A dials B through, while the
 * proxy B dials A through stays healed. Everything is on 127.0.0.1.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

type Mode = "open" | "reset" | "blackhole";

interface Pair {
  client: Socket;
  server: Socket | undefined;
  blackholed: boolean;
}

export class TcpProxy {
  private mode: Mode = "open";
  private delayMs = 0;
  private readonly pairs = new Set<Pair>();
  /** Connections accepted so far. */
  connections = 0;

  private constructor(
    private readonly listener: Server,
    /** Where it forwards to ("host:port"). */
    readonly target: string,
    readonly port: number,
  ) {}

  /** "127.0.0.1:PORT" to dial. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  static async start(target: string, port = 0): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const listener = createServer((socket) => proxy!.accept(socket));
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(port, "127.0.0.1", () => resolve());
    });
    const bound = (listener.address() as { port: number }).port;
    proxy = new TcpProxy(listener, target, bound);
    return proxy;
  }

  /** See the module comment. */
  cut(how: "reset" | "blackhole" = "reset"): void {
    this.mode = how;
    for (const p of this.pairs) {
      if (how === "reset") this.drop(p);
      else p.blackholed = true;
    }
  }

  heal(): void {
    this.mode = "open";
    for (const p of this.pairs) if (p.blackholed) this.drop(p);
  }

  delay(ms: number): void {
    this.delayMs = ms;
  }

  get state(): Mode {
    return this.mode;
  }

  async close(): Promise<void> {
    for (const p of this.pairs) this.drop(p);
    await new Promise<void>((resolve) => this.listener.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.connections++;
    client.on("error", () => {});
    if (this.mode === "reset") {
      client.destroy();
      return;
    }
    const pair: Pair = { client, server: undefined, blackholed: this.mode === "blackhole" };
    this.pairs.add(pair);
    client.on("close", () => this.drop(pair));
    if (pair.blackholed) {
      client.on("data", () => {});
      return;
    }
    const [host, port] = splitAddress(this.target);
    const server = connect(port, host);
    pair.server = server;
    server.on("error", () => {});
    server.on("close", () => this.drop(pair));
    client.on("data", (chunk: Buffer) => this.forward(pair, server, chunk));
    server.on("data", (chunk: Buffer) => this.forward(pair, client, chunk));
  }

  private forward(pair: Pair, to: Socket, chunk: Buffer): void {
    if (pair.blackholed) return;
    if (this.delayMs <= 0) {
      to.write(chunk);
      return;
    }
    setTimeout(() => {
      if (!pair.blackholed && !to.destroyed) to.write(chunk);
    }, this.delayMs);
  }

  private drop(pair: Pair): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server?.destroy();
  }
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(":");
  return [address.slice(0, i).replace(/^\[|\]$/g, ""), Number(address.slice(i + 1))];
}
