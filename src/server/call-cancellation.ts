/**
 * CallCancellation: the cancellation signal the server hands to the store with each
 * write (see AbortSignalLike in src/db/commit-queue.ts). It fires once, when grpc-js
 * reports the call cancelled (client cancel, deadline, disconnect). A plain object with
 * one listener list, cheaper per call than an AbortController (docs/design.md, "Server").
 */
import type { AbortSignalLike } from "../db/kv-backend.js";

export class CallCancellation implements AbortSignalLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  addEventListener(_type: "abort", listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** Fires the signal (once): marks it aborted and calls each listener once. */
  cancel(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}
