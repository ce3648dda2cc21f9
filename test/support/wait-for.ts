/** Polls `cond` every 10 ms until it holds; fails with `what` after `limitMs` (a liveness bound, not a speed check). */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  limitMs = 10_000,
): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
