/**
 * Giving a FileSystem to another thread (a worker): `shareFileSystem` on the thread that
 * owns it, `threadFileSystem` on the thread that receives the spec.
 *
 * A RealFileSystem is rebuilt on the other thread: node:fs works there as well, so its
 * operations cost what they cost on the owner's thread (nothing is proxied). Any other file
 * system is served by a FileSystemHost and reached through a ProxyFileSystem, in lockstep
 * (file-system-channel.ts), so fault injection, crash cloning and operation counting see
 * the other thread's operations as their own, in a deterministic order.
 */
import type { MessagePort } from "node:worker_threads";
import type { FileSystem } from "./file-system.js";
import type { ThreadFileSystemSpec } from "./file-system-channel.js";
import { FileSystemHost } from "./file-system-host.js";
import { ProxyFileSystem } from "./file-system-proxy.js";
import { RealFileSystem } from "./real-file-system.js";

export interface SharedFileSystem {
  /** Post this to the thread (structured-clonable), with `transfer` in the transfer list. */
  readonly spec: ThreadFileSystemSpec;
  readonly transfer: MessagePort[];
  /** The host serving the thread (undefined for a rebuilt real file system). */
  readonly host: FileSystemHost | undefined;
}

/** What another thread needs to use `fs`. A new host (and channel) per call. */
export function shareFileSystem(fs: FileSystem): SharedFileSystem {
  if (fs instanceof RealFileSystem)
    return { spec: { kind: "real" }, transfer: [], host: undefined };
  const host = new FileSystemHost(fs);
  return { spec: host.spec, transfer: [host.transfer], host };
}

export interface ThreadFileSystem {
  readonly fs: FileSystem;
  /**
   * For a proxied file system: sends the host's user a message in the same stream as the
   * operations (see ProxyFileSystem.post); undefined for a rebuilt one.
   */
  readonly post: ((message: unknown) => void) | undefined;
}

/** The file system a spec from `shareFileSystem` stands for, on the receiving thread. */
export function threadFileSystem(spec: ThreadFileSystemSpec): ThreadFileSystem {
  if (spec.kind === "real") return { fs: new RealFileSystem(), post: undefined };
  const proxy = new ProxyFileSystem(spec.port, spec.signals);
  return { fs: proxy, post: (message) => proxy.post(message) };
}
