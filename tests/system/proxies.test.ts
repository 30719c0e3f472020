// Forward authentication through real reverse proxies: nginx (auth_request) and Caddy (forward_auth), both
// from Debian, run as child processes with their configuration in a temporary directory, in front of a small
// upstream that echoes what it received, with `service-api serve` on a files store answering /auth. The
// configurations are read from docs/gateways.md, with the ports replaced: what a reader copies is what runs.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, ROOT, tempDir } from "../helpers/cli.ts";
import { freePort } from "../helpers/redis.ts";
import { type ServerProcess, startServer } from "../helpers/server.ts";

const which = (name: string, fallback: string) => {
  try {
    return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || fallback;
  } catch {
    return existsSync(fallback) ? fallback : null;
  }
};
const NGINX = which("nginx", "/usr/sbin/nginx");
const CADDY = which("caddy", "/usr/bin/caddy");
const created = (stdout: string) => JSON.parse(stdout) as { key: string; id: string };

/** The fenced blocks of docs/gateways.md in `language`, in order: the configurations a reader copies. */
const blocks = (language: string) =>
  [...readFileSync(join(ROOT, "docs/gateways.md"), "utf8").matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);
/** A configuration with the page's ports replaced: service-api's 3001, the API's 8080. */
const ported = (text: string, service: number, upstream: number) =>
  text.replaceAll("127.0.0.1:3001", `127.0.0.1:${service}`).replaceAll("127.0.0.1:8080", `127.0.0.1:${upstream}`);

/** nginx's snippet and server (docs/gateways.md) inside a main configuration that keeps every file in `dir`. */
function nginxConf(dir: string, port: number, service: number, upstream: number): string {
  const [snippet, server] = blocks("nginx");
  writeFileSync(join(dir, "service-api.conf"), snippet);
  const site = ported(server, service, upstream)
    .replace("listen 80;", `listen 127.0.0.1:${port};`)
    .replaceAll("/etc/nginx/snippets/service-api.conf", join(dir, "service-api.conf"));
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `${t}_temp_path ${dir}/tmp;`).join(" ");
  return `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\ndaemon off;\nevents {}\nhttp {\n  access_log off;\n  ${temp}\n${site}\n}\n`;
}

/** Caddy's configuration (docs/gateways.md), served over plain HTTP on `port`, without its admin endpoint. */
const caddyfile = (port: number, service: number, upstream: number) =>
  `{\n\tadmin off\n\tauto_https off\n}\n` + ported(blocks("caddyfile")[0], service, upstream).replace("api.example.com {", `http://127.0.0.1:${port} {`);

interface Proxy {
  name: string;
  binary: string | null;
  /** What it answers while service-api cannot be reached. */
  unreachable: number;
  start(dir: string, port: number, service: number, upstream: number): ChildProcess;
}

const PROXIES: Proxy[] = [
  {
    name: "nginx (auth_request)",
    binary: NGINX,
    unreachable: 503,
    start(dir, port, service, upstream) {
      mkdirSync(join(dir, "tmp"));
      writeFileSync(join(dir, "nginx.conf"), nginxConf(dir, port, service, upstream));
      return spawn(NGINX!, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: ["ignore", "ignore", "pipe"] });
    },
  },
  {
    name: "Caddy (forward_auth)",
    binary: CADDY,
    unreachable: 502,
    start(dir, port, service, upstream) {
      writeFileSync(join(dir, "Caddyfile"), caddyfile(port, service, upstream));
      const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, "config"), XDG_DATA_HOME: join(dir, "data") };
      return spawn(CADDY!, ["run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], { env, stdio: ["ignore", "ignore", "pipe"] });
    },
  },
];

/** Polls `url` until anything answers (the proxy is up), within `timeoutMs`. */
async function reachable(url: string, child: ChildProcess, log: () => string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode}): ${log()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`the proxy did not answer within ${timeoutMs} ms: ${log()}`);
}

for (const proxy of PROXIES) {
  describe.skipIf(!proxy.binary && !process.env.CI)(`forward authentication behind ${proxy.name}`, { timeout: 60_000 }, () => {
    let service: ServerProcess;
    let upstream: Server;
    let child: ChildProcess;
    let url: string;
    let cli: (...args: string[]) => Promise<{ code: number | null; stdout: string }>;
    let stderr = "";
    const cleanups: (() => void)[] = [];
    const keys: Record<string, { key: string; id: string }> = {};

    beforeAll(async () => {
      expect(proxy.binary, `${proxy.name} is not installed (CI installs it: .ci/run)`).toBeTruthy();
      const s = cliWithStore();
      cleanups.push(s.cleanup);
      cli = s.cli;
      for (const [name, ...flags] of [["reader", "-r", "VIEWER"], ["limited", "-r", "VIEWER", "--rate-limit", "1/1h"], ["doomed", "-r", "GUEST"]]) {
        keys[name] = created((await s.cli("apikey", "--create", "--name", name, ...flags, "--json")).stdout);
      }
      service = await startServer({ store: s.store, args: ["--trust-proxy", "127.0.0.1"] });
      upstream = createServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ path: req.url, headers: req.headers }));
      });
      await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
      const { dir, cleanup } = tempDir("service-api-proxy-");
      cleanups.push(cleanup);
      const port = await freePort();
      child = proxy.start(dir, port, Number(new URL(service.url).port), (upstream.address() as { port: number }).port);
      child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
      url = `http://127.0.0.1:${port}`;
      await reachable(url, child, () => stderr);
    });
    afterAll(async () => {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      await service?.stop();
      await new Promise((resolve) => upstream?.close(resolve));
      cleanups.forEach((c) => c());
    });

    const get = async (path: string, key?: string, headers: Record<string, string> = {}) => {
      const response = await fetch(url + path, { headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) } });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, echoed: response.status === 200 ? JSON.parse(text) : undefined };
    };

    it("passes a valid key's request upstream with its id, name and roles (never the client's own), and without the key", async () => {
      const forged = { "x-api-key-id": "forged", "x-api-key-name": "forged", "x-api-key-roles": "ADMIN" };
      const answer = await get("/anything?x=1", keys.reader.key, forged);
      expect(answer.status).toBe(200);
      expect(answer.echoed.path).toBe("/anything?x=1");
      expect(answer.echoed.headers).toMatchObject({ "x-api-key-id": keys.reader.id, "x-api-key-name": "reader", "x-api-key-roles": "VIEWER" });
      expect(answer.echoed.headers.authorization).toBeUndefined();
      expect(JSON.stringify(answer.echoed)).not.toContain(keys.reader.key.slice(5));
      expect((await get("/docker/containers", keys.reader.key)).status).toBe(200);
    });

    it("answers 401 with WWW-Authenticate: Bearer without a key or with a wrong one, before the upstream sees anything", async () => {
      for (const key of [undefined, "sapi_wrong"]) {
        const answer = await get("/anything", key);
        expect(answer.status).toBe(401);
        expect(answer.headers.get("www-authenticate")).toBe("Bearer");
        expect(answer.text).not.toContain('"path"');
      }
    });

    it("answers 403 to a key lacking the location's permission", async () => {
      const answer = await get("/admin/keys", keys.reader.key);
      expect(answer.status).toBe(403);
      expect(answer.text).not.toContain('"path"');
    });

    it("answers 429 with Retry-After and the RateLimit headers once a key's rate limit is full", async () => {
      expect((await get("/anything", keys.limited.key)).status).toBe(200);
      const over = await get("/anything", keys.limited.key);
      expect(over.status).toBe(429);
      const retry = Number(over.headers.get("retry-after"));
      expect(retry).toBeGreaterThan(3_000);
      expect(retry).toBeLessThanOrEqual(3_600);
      expect(over.headers.get("ratelimit")).toMatch(/^limit=1, remaining=0, reset=\d+$/);
      expect(over.headers.get("ratelimit-policy")).toBe("1;w=3600");
    });

    it("refuses a key deleted with the CLI on the very next request", async () => {
      expect((await get("/anything", keys.doomed.key)).status).toBe(200);
      expect((await cli("apikey", "--delete", "--name", "doomed")).code).toBe(0);
      expect((await get("/anything", keys.doomed.key)).status).toBe(401);
    });

    // Last: it stops the service.
    it(`answers ${proxy.unreachable} and passes nothing upstream while service-api is down`, async () => {
      let reached = 0;
      upstream.on("request", () => reached++);
      await service.stop();
      const answer = await get("/anything", keys.reader.key);
      expect(answer.status).toBe(proxy.unreachable);
      expect(reached).toBe(0);
    });
  });
}
