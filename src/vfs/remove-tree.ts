import { type FileSystem, joinPath } from "./file-system.js";

/**
 * Removes `path` and all below it (files are removed; directories are listed, emptied,
 * removed). The removal is durable only after `syncDir` of the parent.
 */
export async function removeTree(fs: FileSystem, path: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.list(path);
  } catch {
    await fs.remove(path);
    return;
  }
  for (const name of names) await removeTree(fs, joinPath(path, name));
  await fs.removeDir(path);
}
