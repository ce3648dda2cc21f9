/**
 * Earlier optimisation of hot code in the `kv-engine serve` process, so that the first
 * calls after a start are served at nearly warm speed (issue 27: cold p50 <= 1.5x warm).
 *
 * V8 optimises a function with TurboFan once it has run about `--interrupt-budget` bytes of
 * bytecode (66 KiB by default) and, after any change of its type feedback, another
 * `--minimum-invocations-after-ic-update` calls (500). A put crosses most of its functions
 * once, so the first several hundred calls after a start run interpreted or baseline code
 * on every member. `tierUpEarly` lowers both: the budget to 8 KiB and the wait to 20
 * calls. Warm speed is unchanged; more functions are compiled (on V8's background
 * compiler thread) in the first seconds.
 *
 * Contract: call it before the server's modules are loaded (flags read when a function's
 * feedback is set up); it changes the process's V8 flags, so only the `serve` command,
 * which owns its process, calls it, never the library. A flag given on node's own command
 * line (`node --interrupt-budget=N ...`) is left as given.
 */
import { setFlagsFromString } from "node:v8";

/** The flags `tierUpEarly` sets, by name, with the value it sets. */
export const EARLY_TIER_UP_FLAGS: Readonly<Record<string, number>> = {
  "interrupt-budget": 8 * 1024,
  "minimum-invocations-after-ic-update": 20,
};

/**
 * Sets the flags of EARLY_TIER_UP_FLAGS that `execArgv` (node's own command-line options)
 * does not name; returns the ones it set, as `--name=value`.
 */
export function tierUpEarly(execArgv: readonly string[] = process.execArgv): string[] {
  const set: string[] = [];
  for (const [name, value] of Object.entries(EARLY_TIER_UP_FLAGS)) {
    const given = execArgv.some((a) => {
      const bare = a.replace(/^--(no-)?/, "").replaceAll("_", "-");
      return bare === name || bare.startsWith(`${name}=`);
    });
    if (given) continue;
    const flag = `--${name}=${value}`;
    setFlagsFromString(flag);
    set.push(flag);
  }
  return set;
}
