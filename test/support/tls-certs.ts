/**
 * Test-only TLS material made with the `openssl` command at test time: a CA, a server
 * certificate for 127.0.0.1/localhost signed by it, a client certificate signed by it,
 * and a second, unrelated CA with its own client certificate (for "wrong CA" cases).
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface TlsFiles {
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  otherCaCert: string;
  otherClientCert: string;
  otherClientKey: string;
  /** A cluster member's certificate (server and client use, 127.0.0.1), signed by ca. */
  peerCert: string;
  peerKey: string;
  /** The same, signed by other-ca. */
  otherPeerCert: string;
  otherPeerKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
  ]);
}

function makeLeaf(dir: string, name: string, ca: string, ext: string): void {
  openssl(dir, [
    "req",
    "-new",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  ]);
}

/** Writes the files into `dir` and returns their PEM contents. */
export function makeTlsFiles(dir: string): TlsFiles {
  makeCa(dir, "ca");
  makeCa(dir, "other-ca");
  makeLeaf(
    dir,
    "server",
    "ca",
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
  );
  makeLeaf(dir, "client", "ca", "extendedKeyUsage=clientAuth\n");
  makeLeaf(dir, "other-client", "other-ca", "extendedKeyUsage=clientAuth\n");
  const peerExt =
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n";
  makeLeaf(dir, "peer", "ca", peerExt);
  makeLeaf(dir, "other-peer", "other-ca", peerExt);
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  return {
    caCert: read("ca.crt"),
    serverCert: read("server.crt"),
    serverKey: read("server.key"),
    clientCert: read("client.crt"),
    clientKey: read("client.key"),
    otherCaCert: read("other-ca.crt"),
    otherClientCert: read("other-client.crt"),
    otherClientKey: read("other-client.key"),
    peerCert: read("peer.crt"),
    peerKey: read("peer.key"),
    otherPeerCert: read("other-peer.crt"),
    otherPeerKey: read("other-peer.key"),
  };
}
