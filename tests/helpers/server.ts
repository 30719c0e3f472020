// Runs `service-api serve --port 0` as a child process (the built CLI, or Deno on the sources) and
// hands back its URL; `stop()` sends a signal and resolves with how the process ended.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { type RunningServer, serve } from "../../lib/http/serve.ts";
import { CLI, ROOT } from "./cli.ts";
import { type RedisServer, startRedis } from "./redis.ts";

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and resolves with the exit status, within `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface StartOptions {
  store: string;
  runtime?: "node" | "deno";
  env?: Record<string, string | undefined>;
  args?: string[];
  /** The whole command line instead of `serve --port 0 --store <store> …args` (the store then comes from `env`). */
  argv?: string[];
  timeoutMs?: number;
}

/** Starts a server and waits for its "listening on <url>" line. */
export function startServer(options: StartOptions): Promise<ServerProcess> {
  const args = options.argv ?? ["serve", "--port", "0", "--store", options.store, ...(options.args ?? [])];
  const child = options.runtime === "deno"
    ? spawn(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "cli.ts", ...args], { cwd: ROOT, env: { ...process.env, ...options.env } })
    : spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: undefined, NO_COLOR: "1", ...options.env } });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d) => (stderr += d));
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal }))
  );

  const server: Omit<ServerProcess, "url"> = {
    child,
    stderr: () => stderr,
    async stop(signal = "SIGTERM", timeoutMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = new Promise<never>((_, reject) =>
        setTimeout(() => {
          child.kill("SIGKILL");
          reject(new Error(`server did not exit within ${timeoutMs} ms after ${signal}; stderr:\n${stderr}`));
        }, timeoutMs).unref()
      );
      return Promise.race([exited, timer]);
    },
  };

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start within ${options.timeoutMs ?? 30_000} ms; stderr:\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (!match) return;
      clearTimeout(timer);
      child.stderr!.off("data", check);
      resolve({ ...server, url: match[1] });
    };
    child.stderr!.on("data", check);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited early (${code ?? signal}); stderr:\n${stderr}`));
    });
  });
}

/** POSTs a GraphQL request with an optional bearer key; returns status, headers and parsed body. */
export async function gql(
  url: string,
  query: string,
  options: { key?: string; variables?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${url}/graphql`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ query, variables: options.variables }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/**
 * `serve()` in this process on port 0, quiet about the store's state, each server closed after its test:
 * `const start = inProcessServers();` at the top of a file, then `await start({ store })` in a test.
 */
export function inProcessServers(): (options: Parameters<typeof serve>[0]) => Promise<RunningServer> {
  let open: RunningServer[] = [];
  afterEach(async () => {
    await Promise.all(open.map((s) => s.close()));
    open = [];
  });
  return async (options) => {
    const server = await serve({ port: 0, onError: (e) => console.error(e), storeStatus: { down: () => {}, up: () => {} }, ...options });
    open.push(server);
    return server;
  };
}

/** `serve` as a child process on a store in `dir`, with every module it loads written to a trace: `loaded()` reads it. */
export async function startTracedServer(dir: string): Promise<ServerProcess & { loaded(): string }> {
  const trace = join(dir, "trace.txt");
  const server = await startServer({
    store: join(dir, "keys"),
    env: { NODE_OPTIONS: `--import ${join(ROOT, "tests/fixtures/trace-register.mjs")}`, TRACE_FILE: trace },
  });
  return Object.assign(server, { loaded: () => readFileSync(trace, "utf8") });
}

/**
 * A real redis-server for the enclosing `describe`, and a list for the `serve` children a test starts on it:
 * both stopped after the block. `shared.redis` is set once the block's `beforeAll` ran.
 */
export function redisWithServers(): { readonly redis: RedisServer; servers: ServerProcess[] } {
  let redis: RedisServer | undefined;
  const servers: ServerProcess[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await redis?.destroy();
  });
  return {
    get redis() {
      if (!redis) throw new Error("redisWithServers: the redis-server starts in beforeAll");
      return redis;
    },
    servers,
  };
}
