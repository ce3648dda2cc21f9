/**
 * Paths confined to a directory, for directories a remote caller names (the admin
 * service's checkpoints under the server's backup directory): `confinedNewPath(root,
 * name)` resolves `name` to a path inside `root` that does not exist yet, or says why it
 * refuses. It refuses iff `name` is empty, holds a NUL, a "." or ".." segment or an empty
 * one, is absolute and not inside `root`, passes through a component that is a symbolic
 * link or not a directory, has a parent that does not exist, or names something that
 * exists (a symbolic link included). `root` itself is taken through its real path, so a
 * root that is a link is fine.
 *
 * On the real file system (node:fs), not the FileSystem interface: the backup directory is
 * a place on disk the operator configured. The check and the later mkdir are two steps: a
 * process that can write into `root` could swap a component for a link in between, so
 * `root` must be writable only by the server's user (docs/server.md says so).
 */
import { lstat, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

export type ConfinedPath =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly reason: string; readonly exists: boolean };

const refuse = (reason: string, exists = false): ConfinedPath => ({ ok: false, reason, exists });

/** See the module comment. */
export async function confinedNewPath(root: string, name: string): Promise<ConfinedPath> {
  if (name.length === 0) return refuse("the directory name is empty");
  if (name.includes("\0")) return refuse("the directory name holds a NUL byte");
  let rootReal: string;
  try {
    rootReal = await realpath(root);
  } catch (err) {
    return refuse(`the backup directory ${root} cannot be resolved: ${(err as Error).message}`);
  }
  let rel = name;
  if (isAbsolute(name)) {
    const inside = [resolve(root), rootReal]
      .map((r) => relative(r, resolve(name)))
      .find((r) => r.length > 0 && !r.startsWith("..") && !isAbsolute(r));
    if (inside === undefined) return refuse(`${name} is not inside the backup directory`);
    rel = inside;
  }
  const segments = rel.split(sep === "/" ? "/" : /[\\/]/);
  for (const s of segments) {
    if (s === "..") return refuse(`${name}: ".." is not allowed`);
    if (s === "." || s === "") return refuse(`${name}: empty and "." segments are not allowed`);
  }
  let at = rootReal;
  for (const [i, s] of segments.entries()) {
    at = join(at, s);
    const last = i === segments.length - 1;
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        return refuse(`${at}: ${(err as Error).message}`);
      }
      if (last) return { ok: true, path: at };
      return refuse(`${at} does not exist`);
    }
    if (last) return refuse(`${at} already exists`, true);
    if (st.isSymbolicLink()) return refuse(`${at} is a symbolic link`);
    if (!st.isDirectory()) return refuse(`${at} is not a directory`);
  }
  return refuse(`${name}: nothing to resolve`);
}
