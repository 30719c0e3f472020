// Forward authentication through real reverse proxies: nginx (auth_request) and Caddy (forward_auth), both
// from Debian, run as child processes with their configuration in a temporary directory, in front of a small
// upstream that echoes what it received, with `service-api serve` on a files store answering /auth. The
// configurations are those of docs/gateways.md, with the ports filled in.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliWithStore, tempDir } from "../helpers/cli.ts";
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

/** nginx's configuration (docs/gateways.md), for a service on `service` and an upstream on `upstream`. */
const nginxConf = (dir: string, port: number, service: number, upstream: number) => `
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
daemon off;
events {}
http {
  access_log off;
  client_body_temp_path ${dir}/tmp; proxy_temp_path ${dir}/tmp; fastcgi_temp_path ${dir}/tmp; uwsgi_temp_path ${dir}/tmp; scgi_temp_path ${dir}/tmp;
  upstream service_api { server 127.0.0.1:${service}; }
  server {
    listen 127.0.0.1:${port};
    location / {
      set $required_permission "";
      auth_request /_auth;
      include ${dir}/protect.conf;
      proxy_pass http://127.0.0.1:${upstream};
    }
    location /docker/ {
      set $required_permission "DOCKER:READ_ANY";
      auth_request /_auth;
      include ${dir}/protect.conf;
      proxy_pass http://127.0.0.1:${upstream};
    }
    location /keys/ {
      set $required_permission "API_KEY:READ_ANY";
      auth_request /_auth;
      include ${dir}/protect.conf;
      proxy_pass http://127.0.0.1:${upstream};
    }
    location = /_auth {
      internal;
      proxy_pass http://service_api/auth;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Required-Permission $required_permission;
      proxy_intercept_errors on;
      error_page 429 503 = @auth_refused;
    }
    location @auth_refused {
      set $auth_status $upstream_status;
      set $auth_retry_after $upstream_http_retry_after;
      set $auth_ratelimit $upstream_http_ratelimit;
      set $auth_ratelimit_policy $upstream_http_ratelimit_policy;
      return 500;
    }
    location @auth_error {
      add_header Retry-After $auth_retry_after always;
      add_header RateLimit $auth_ratelimit always;
      add_header RateLimit-Policy $auth_ratelimit_policy always;
      if ($auth_status = 429) { return 429; }
      if ($auth_status = 503) { return 503; }
      return 500;
    }
  }
}`;
const NGINX_PROTECT = `
auth_request_set $api_key_id $upstream_http_x_api_key_id;
auth_request_set $api_key_name $upstream_http_x_api_key_name;
auth_request_set $api_key_roles $upstream_http_x_api_key_roles;
proxy_set_header X-Api-Key-Id $api_key_id;
proxy_set_header X-Api-Key-Name $api_key_name;
proxy_set_header X-Api-Key-Roles $api_key_roles;
proxy_set_header Authorization "";
proxy_set_header X-Api-Key "";
error_page 500 = @auth_error;
`;

/** Caddy's configuration (docs/gateways.md). */
const caddyfile = (port: number, service: number, upstream: number) => `{
  admin off
  auto_https off
}
(protect) {
  request_header -X-Api-Key-Id
  request_header -X-Api-Key-Name
  request_header -X-Api-Key-Roles
  forward_auth 127.0.0.1:${service} {
    uri /auth?permission={args.0}
    copy_headers X-Api-Key-Id X-Api-Key-Name X-Api-Key-Roles
  }
  request_header -Authorization
  request_header -X-Api-Key
  reverse_proxy 127.0.0.1:${upstream}
}
http://127.0.0.1:${port} {
  route /docker/* {
    import protect DOCKER:READ_ANY
  }
  route /keys/* {
    import protect API_KEY:READ_ANY
  }
  route {
    import protect ""
  }
}
`;

interface Proxy {
  name: string;
  binary: string | null;
  start(dir: string, port: number, service: number, upstream: number): ChildProcess;
}

const PROXIES: Proxy[] = [
  {
    name: "nginx (auth_request)",
    binary: NGINX,
    start(dir, port, service, upstream) {
      mkdirSync(join(dir, "tmp"));
      writeFileSync(join(dir, "protect.conf"), NGINX_PROTECT);
      writeFileSync(join(dir, "nginx.conf"), nginxConf(dir, port, service, upstream));
      return spawn(NGINX!, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: ["ignore", "ignore", "pipe"] });
    },
  },
  {
    name: "Caddy (forward_auth)",
    binary: CADDY,
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
      service = await startServer({ store: s.store });
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
      const answer = await get("/keys/list", keys.reader.key);
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
  });
}
