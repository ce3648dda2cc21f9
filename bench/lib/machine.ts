/** Describes the machine a benchmark ran on, for the report header. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as os from "node:os";
import { resolve, sep } from "node:path";

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  /** os.loadavg() when the run started (1, 5, 15 minutes): other load on the machine. */
  loadAverage?: number[];
  os: string;
  node: string;
  dataDir: string;
  /** File system type of the data directory (e.g. "ext4"), "unknown" if not found. */
  fsType: string;
  /** The device or source mounted there, when /proc/mounts says. */
  fsSource?: string;
  /** `git rev-parse --short HEAD`, with "-dirty" when the work tree has changes. */
  gitCommit?: string;
  date: string;
}

function run(cmd: string, args: string[], cwd?: string): string | undefined {
  try {
    return execFileSync(cmd, args, {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 10_000,
    }).trim();
  } catch {
    return undefined;
  }
}

/** /proc/mounts escapes spaces etc. as octal (\040). */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) =>
    String.fromCharCode(Number.parseInt(oct, 8)),
  );
}

/** The longest mount point containing `dir`, from /proc/mounts (Linux only). */
function mountOf(dir: string): { type: string; source: string } | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/mounts", "utf8");
  } catch {
    return undefined;
  }
  const path = resolve(dir);
  let best: { type: string; source: string; len: number } | undefined;
  for (const line of text.split("\n")) {
    const [source, mountPoint, type] = line.split(" ");
    if (source === undefined || mountPoint === undefined || type === undefined) continue;
    const mp = unescapeMount(mountPoint);
    const inside = mp === "/" || path === mp || path.startsWith(mp.endsWith(sep) ? mp : mp + sep);
    if (inside && (best === undefined || mp.length >= best.len)) {
      best = { type, source: unescapeMount(source), len: mp.length };
    }
  }
  return best && { type: best.type, source: best.source };
}

export function machineInfo(dataDir: string, repoDir: string): MachineInfo {
  const cpus = os.cpus();
  const mount = mountOf(dataDir);
  // `stat -f` is the fallback: it cannot tell ext4 from ext2/ext3.
  const fsType = mount?.type ?? run("stat", ["-f", "-c", "%T", dataDir]) ?? "unknown";
  const info: MachineInfo = {
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    cores: os.availableParallelism?.() ?? cpus.length,
    memoryBytes: os.totalmem(),
    loadAverage: os.loadavg(),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    dataDir,
    fsType,
    date: new Date().toISOString(),
  };
  if (mount !== undefined) info.fsSource = mount.source;
  const commit = run("git", ["rev-parse", "--short", "HEAD"], repoDir);
  if (commit !== undefined && commit !== "") {
    const dirty = run("git", ["status", "--porcelain", "--untracked-files=no"], repoDir);
    info.gitCommit = dirty !== undefined && dirty !== "" ? `${commit}-dirty` : commit;
  }
  return info;
}
