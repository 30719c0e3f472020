// The store over TLS: rediss:// to a real redis-server that requires client certificates, with the CA, the
// client certificate and its key named by SERVICE_API_REDIS_TLS_CA, _CERT and _KEY; made with openssl here.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { freePort, type RedisServer, startRedis } from "../helpers/redis.ts";

/** A CA, a server certificate for 127.0.0.1 signed by it, and a client certificate signed by it. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=service-api test CA");
  writeFileSync(join(dir, "san.ext"), "subjectAltName=IP:127.0.0.1\n");
  for (const [name, ext] of [["server", ["-extfile", "san.ext"]], ["client", []]] as const) {
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", ...ext);
  }
}

describe("a Redis store over TLS with client certificates", () => {
  let dir: string;
  let redis: RedisServer;
  let url: string;
  let tls: Record<string, string>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "service-api-tls-"));
    makeCertificates(dir);
    const tlsPort = await freePort();
    redis = await startRedis({
      args: ["--tls-port", String(tlsPort), "--tls-cert-file", join(dir, "server.crt"), "--tls-key-file", join(dir, "server.key"),
        "--tls-ca-cert-file", join(dir, "ca.crt"), "--tls-auth-clients", "yes"],
    });
    url = `rediss://127.0.0.1:${tlsPort}/0`;
    tls = { SERVICE_API_REDIS_TLS_CA: join(dir, "ca.crt"), SERVICE_API_REDIS_TLS_CERT: join(dir, "client.crt"), SERVICE_API_REDIS_TLS_KEY: join(dir, "client.key") };
  }, 60_000);
  afterAll(async () => {
    await redis?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates and lists keys, and doctor passes, with the CA, the client certificate and its key", async () => {
    const created = await runCli(["apikey", "--create", "--name", "over tls", "-r", "GUEST", "--store", url], { env: tls });
    expect(created.code, created.stderr).toBe(0);
    const listed = await runCli(["apikey", "--list", "--json", "--store", url], { env: tls });
    expect(JSON.parse(listed.stdout).keys.map((k: { name: string }) => k.name)).toEqual(["over tls"]);
    const doctor = await runCli(["doctor", "--store", url], { env: tls });
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(/^pass  redis +rediss:\/\/127\.0\.0\.1:\d+\/0 answers: one Redis/m);
  });

  it("cannot connect (exit 3) without a client certificate, or without the CA that signed the server's", async () => {
    const noCert = await runCli(["apikey", "--list", "--store", url], { env: { SERVICE_API_REDIS_TLS_CA: tls.SERVICE_API_REDIS_TLS_CA } });
    expect(noCert.code).toBe(3);
    expect(noCert.stderr).toContain("Key store unavailable: cannot connect to Redis");
    const noCa = await runCli(["apikey", "--list", "--store", url], { env: { ...tls, SERVICE_API_REDIS_TLS_CA: undefined } });
    expect(noCa.code).toBe(3);
    expect(noCa.stderr).toMatch(/certificate/);
  });

  it("refuses TLS files with a redis:// URL, an unreadable file, or a certificate without its key, as bad usage naming the variable", async () => {
    const plain = await runCli(["apikey", "--list", "--store", redis.url], { env: tls });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("SERVICE_API_REDIS_TLS_CA, SERVICE_API_REDIS_TLS_CERT, SERVICE_API_REDIS_TLS_KEY set, but the store URL is not rediss://");
    const missing = await runCli(["apikey", "--list", "--store", url], { env: { ...tls, SERVICE_API_REDIS_TLS_CA: join(dir, "nope.crt") } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`Cannot read SERVICE_API_REDIS_TLS_CA (${join(dir, "nope.crt")}): ENOENT`);
    const noKey = await runCli(["apikey", "--list", "--store", url], { env: { ...tls, SERVICE_API_REDIS_TLS_KEY: undefined } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("SERVICE_API_REDIS_TLS_CERT and SERVICE_API_REDIS_TLS_KEY go together");
  });
});
