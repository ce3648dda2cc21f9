/**
 * The optional peer dependencies of the package (package.json `peerDependencies`, each
 * optional in `peerDependenciesMeta`): the gRPC server, the client and the CLI's `serve`
 * need them, the embedded engine does not, so an embedded-only install leaves them out.
 *
 * An entry that needs some of them checks with `requirePeers` before it loads its
 * implementation, and so fails with one error naming every missing package and the npm
 * command that installs them, instead of Node's ERR_MODULE_NOT_FOUND for the first one.
 */
import { createRequire } from "node:module";

/** What `kv-engine/client` (and the CLI's put, get, del and scan) import. */
export const CLIENT_PEERS: readonly string[] = ["@grpc/grpc-js", "@bufbuild/protobuf"];
/** What `kv-engine/server` imports. */
export const SERVER_PEERS: readonly string[] = [
  "@grpc/grpc-js",
  "@grpc/reflection",
  "grpc-health-check",
  "@bufbuild/protobuf",
];
/** What `kv-engine serve` imports: the server's, plus logs and metrics. */
export const SERVE_PEERS: readonly string[] = [...SERVER_PEERS, "pino", "prom-client"];

/** The version range package.json gives `name` (undefined for a package it does not list). */
export function peerRange(name: string): string | undefined {
  const pkg = createRequire(import.meta.url)("../../../package.json") as {
    peerDependencies?: Record<string, string>;
  };
  return pkg.peerDependencies?.[name];
}

/** The names among `names` that do not resolve from this package. */
export function missingPeers(names: readonly string[]): string[] {
  return names.filter((name) => {
    try {
      import.meta.resolve(name);
      return false;
    } catch (err) {
      // Another failure (a package that exports no "import" entry, say) is not absence.
      return (err as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND";
    }
  });
}

/** Thrown by `requirePeers`; `missing` lists the packages to install. */
export class MissingPeersError extends Error {
  override readonly name = "MissingPeersError";
  readonly missing: readonly string[];

  constructor(what: string, missing: readonly string[]) {
    const install = missing.map((n) => {
      const range = peerRange(n);
      return range === undefined ? n : `${n}@${range}`;
    });
    super(
      `${what} needs ${missing.join(", ")}, not installed (optional peer dependencies of ` +
        `kv-engine, which the embedded store does not need); install with: npm install ${install.join(" ")}`,
    );
    this.missing = missing;
  }
}

/** Throws MissingPeersError naming `what` unless every package of `names` resolves. */
export function requirePeers(what: string, names: readonly string[]): void {
  const missing = missingPeers(names);
  if (missing.length > 0) throw new MissingPeersError(what, missing);
}
