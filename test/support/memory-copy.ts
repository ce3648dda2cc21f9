/**
 * An independent copy of every file of a MemoryFileSystem (a plain copy: no crash
 * semantics), for tests that damage or replay a store's files without touching the
 * original. `dir` is created first (the store's directory), as the copy's files live in it.
 */
import { MemoryFileSystem } from "../../src/index.js";

export async function copyOfFiles(src: MemoryFileSystem, dir: string): Promise<MemoryFileSystem> {
  const out = new MemoryFileSystem();
  await out.mkdir(dir);
  for (const [path, bytes] of src.snapshotFiles()) out.writeFile(`/${path}`, bytes);
  return out;
}
