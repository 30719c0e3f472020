/**
 * The `serve` command: its flags and help text, and its flow: resolve host, port and store like the
 * CLI does, listen, and on SIGTERM or SIGINT stop accepting, let requests in flight finish, close the
 * store, exit 0. The service itself (GraphQL, HTTP) is imported only when the command runs.
 */
import process from "node:process";
import { ServiceError } from "../../core/errors.ts";
import type { Output } from "../format-results.ts";
import type { CommandDef } from "../command.ts";
import { bindThenSettleAsOwner, describeStore, openKeyStore, parseStoreSpec, resolveRetiredRetention, storeSource } from "../../store/config.ts";
import { redactSecrets } from "../../core/secret.ts";
import { withStoreHint } from "../store-hint.ts";
import { createWebhookStats } from "../../http/webhooks/stats.ts";

export interface ServeFlags {
  host?: string;
  port?: string | number;
  store?: string;
  /** False with `--no-explorer`: browsers get the JSON answers, not GraphiQL. */
  explorer?: boolean;
  /** False with `--no-console`: no web console at /console, no consent page at /authorize. */
  console?: boolean;
  /** False with `--no-auth-endpoint`: no /auth for reverse proxies, no /v2/keys.verifyKey. */
  authEndpoint?: boolean;
  corsOrigin?: string;
  metricsAllow?: string;
  /** False with `--no-last-use`: this server does not record when keys were last used. */
  lastUse?: boolean;
  /** How long retired secrets are recognised (a duration; see `resolveRetiredRetention`). */
  retiredRetention?: string;
  /** Failed authentications allowed per client address (`60/1m`, or `off`); see `http/auth-throttle.ts`. */
  authFailureLimit?: string;
  /** Proxies whose X-Forwarded-For is believed: IPs or CIDR blocks, comma-separated. */
  trustProxy?: string;
}

type Env = Record<string, string | undefined>;

/** `--port`, else `PORT`, else 3001; must be an integer 0..65535 (0 picks a free port). */
export function resolvePort(flag: string | number | undefined, env: Env = process.env): number {
  const raw = String(flag ?? env.PORT ?? "").trim() || "3001";
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) {
    throw new ServiceError("USAGE", `Invalid port '${raw}': use a whole number from 0 to 65535 (0 picks a free port)`);
  }
  return port;
}

/**
 * `--cors-origin`, else `SERVICE_API_CORS_ORIGINS`, or undefined (CORS off). `serve()` checks the origins
 * (`http/cors.ts`), so that the service's code still loads only when the command runs.
 */
export function resolveCorsOrigins(flag: string | undefined, env: Env = process.env): string | undefined {
  return (flag ?? env.SERVICE_API_CORS_ORIGINS ?? "").trim() || undefined;
}

/** `--metrics-allow`, else `SERVICE_API_METRICS_ALLOW`, else loopback: the addresses that read /metrics without a key. */
export function resolveMetricsAllow(flag: string | undefined, env: Env = process.env): string[] {
  const raw = flag ?? env.SERVICE_API_METRICS_ALLOW ?? "127.0.0.1,::1";
  return raw.split(",").map((a) => a.trim()).filter(Boolean);
}

/**
 * Whether the server records last use: off with `--no-last-use` or `SERVICE_API_LAST_USE=off` (also
 * `0`, `false`, `no`), else on. Anything else in the variable is a mistake, said at start-up.
 */
export function resolveLastUse(flag: boolean | undefined, env: Env = process.env): boolean {
  return flag !== false && onOff(env, "SERVICE_API_LAST_USE", true);
}

/** Whether /metrics includes the GC histogram: `SERVICE_API_METRICS_GC=on`; off by default (see `http/_process-metrics.ts`). */
export function resolveMetricsGc(env: Env = process.env): boolean {
  return onOff(env, "SERVICE_API_METRICS_GC", false);
}

/** An on/off variable (`on`, `1`, `true`, `yes` / `off`, `0`, `false`, `no`, any case); unset or empty is `fallback`. */
function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? "").trim().toLowerCase();
  if (raw === "") return fallback;
  if (["on", "1", "true", "yes"].includes(raw)) return true;
  if (["off", "0", "false", "no"].includes(raw)) return false;
  throw new ServiceError("USAGE", `Invalid ${name} '${raw}': use on or off`);
}

/** Every setting of `serve` from its flags and the environment, checked before anything is loaded. */
function serveSettings(flags: ServeFlags, env: Env) {
  return {
    host: (flags.host ?? env.HOST ?? "").trim() || "127.0.0.1",
    port: resolvePort(flags.port, env),
    corsOrigins: resolveCorsOrigins(flags.corsOrigin, env),
    allow: resolveMetricsAllow(flags.metricsAllow, env),
    recordLastUse: resolveLastUse(flags.lastUse, env),
    gcMetrics: resolveMetricsGc(env),
    retiredRetentionMs: resolveRetiredRetention(flags.retiredRetention, env),
    authFailureLimit: flags.authFailureLimit ?? (env.SERVICE_API_AUTH_FAILURE_LIMIT?.trim() || undefined),
    trustProxy: (flags.trustProxy ?? env.SERVICE_API_TRUST_PROXY ?? "").trim() || undefined,
  };
}

/**
 * Why the service could not listen, and what to change: a busy port or one that needs rights exits 1 (the
 * operation could not be done), a host that does not resolve or is not an address of this machine exits 2
 * (bad input). Anything else is passed on as it came.
 */
export function listenFailure(error: unknown, host: string, port: number): unknown {
  const cause = (error as { cause?: { code?: unknown; name?: unknown } })?.cause ?? (error as { code?: unknown; name?: unknown });
  const code = String(cause?.code ?? cause?.name ?? "");
  const where = `Cannot listen on ${host.includes(":") ? `[${host}]` : host}:${port}`;
  const otherPort = "choose another port with --port <port> or PORT (0 picks a free one)";
  if (code === "EADDRINUSE" || code === "AddrInUse") {
    return new ServiceError("INTERNAL", `${where}: address already in use (another service-api, or another program). Stop it, or ${otherPort}`, { cause: error });
  }
  if (code === "EACCES" || code === "PermissionDenied") {
    const why = port < 1024 ? `ports below 1024 need root or CAP_NET_BIND_SERVICE` : `permission denied`;
    return new ServiceError("INTERNAL", `${where}: ${why}. Run with those rights, or ${otherPort}`, { cause: error });
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EADDRNOTAVAIL" || code === "AddrNotAvailable") {
    const why = code === "EADDRNOTAVAIL" || code === "AddrNotAvailable" ? "not an address of this machine" : "the host name does not resolve";
    return new ServiceError(
      "USAGE",
      `${where}: ${why}. Use --host <address> or HOST with one of this machine's addresses: 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or ::`,
      { cause: error },
    );
  }
  return error;
}

/** Waits for SIGTERM or SIGINT, then stops accepting, lets requests in flight finish and closes the store. */
async function stopOnSignal(server: { close(): Promise<void> }, store: { close(): Promise<void> }, info: (line: string) => void): Promise<void> {
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  info(`${signal}: finishing requests in flight, then stopping`);
  await server.close();
  await store.close();
  info("stopped");
}

/**
 * Runs the service until SIGTERM or SIGINT.
 * @example await runServe({ port: 0 }, { log: console.error })
 */
export async function runServe(
  flags: ServeFlags,
  io: { log: (line: string) => void; debug?: (line: string) => void; env?: Env },
): Promise<Output> {
  const env = io.env ?? process.env;
  const { host, port, corsOrigins, allow, recordLastUse, gcMetrics, retiredRetentionMs, authFailureLimit, trustProxy } = serveSettings(flags, env);
  const [{ serve }, { addressMatcher, checkAuthThrottle, createMetrics, createServiceLog, observers }] = await Promise.all([
    import("../../http/serve.ts"),
    import("../../http/ops.ts"),
  ]);
  try {
    addressMatcher(allow);
  } catch (error) {
    throw new ServiceError("USAGE", (error as Error).message);
  }
  checkAuthThrottle({ authFailureLimit, trustProxy }); // a bad value exits 2 before the store is opened
  // Every line of the service (access, warnings, listening, outage, stopping) goes through one log, so
  // that LOG_FORMAT=json makes all of them JSON and they stay in order.
  const log = createServiceLog({ env, write: (text) => io.log(text.slice(0, -1)) });
  // A reader of stderr that goes away (a log shipper restarting, `serve 2>&1 | head`) makes the next write
  // fail with EPIPE, which unhandled would end the service: its lines have nowhere to go, requests still do.
  process.stderr.on("error", () => {});
  const info = (line: string) => log.line("info", line);
  const spec = parseStoreSpec(flags.store, env);
  // A missing directory store is made now, by the user the service runs as: it owns the store from the
  // start, and a later root CLI run on it acts as that user instead of leaving root-owned files behind.
  const store = await openKeyStore(spec, (line) => log.line("debug", line), { create: true, retiredRetentionMs }).catch((error) => {
    throw withStoreHint(error, flags.store, env);
  });
  info(`serving store ${describeStore(spec)} (from ${storeSource(flags.store, env).detail})`);
  // What a Redis store runs on, and what an operator should fix (persistence that brings deleted keys back).
  const topology = await store.topology?.().catch(() => undefined);
  if (topology) {
    info(`Redis: ${topology.mode === "sentinel" ? "Sentinel, master" : "one Redis,"} ${topology.master}, ${topology.replicas ?? "unknown"} replicas`);
    for (const warning of topology.warnings) log.line("warn", warning);
  }
  const webhookStats = createWebhookStats();
  const metrics = createMetrics({ store, allow, gcMetrics, webhooks: webhookStats });
  let server;
  try {
    // Root on another user's store acts as that user (see the store's trust rules); a server binds its port
    // first, which may need root, then drops root for good.
    server = await bindThenSettleAsOwner(() => serve({
      store,
      host,
      port,
      explorer: flags.explorer !== false,
      console: flags.console !== false,
      authEndpoint: flags.authEndpoint !== false,
      corsOrigins,
      observer: observers(log, metrics),
      metrics,
      recordLastUse,
      authFailureLimit,
      trustProxy,
      // The client got a generic 500; the operator gets the message (and the stack at LOG_LEVEL=debug).
      onError: (error) => {
        log.line("error", `internal error: ${redactSecrets(error instanceof Error ? error.message : String(error))}`);
        if (error instanceof Error && error.stack) log.line("debug", redactSecrets(error.stack));
      },
      // Why the service answers 503, once per outage (at error level), and its end once (info).
      storeStatus: { down: (line) => log.line("error", line), up: info },
    }));
  } catch (error) {
    await store.close();
    log.flush(); // the lines before the failure go first: the error is the last thing printed
    throw listenFailure(error, host, port);
  }
  // One line of a terminal at 80 columns for a loopback address: the paths, not the URL again and again.
  const listening = `service-api listening on ${server.url} (/graphql${flags.console !== false ? ", /console" : ""}, /healthz)`;
  // A port the system chose appears nowhere else: that line is written at LOG_LEVEL=warn and error too.
  if (port === 0) log.announce(listening);
  else info(listening);
  log.flush(); // at once: scripts and tests wait for this line
  // Events out: this server delivers webhooks, sharing the work with any other server on the store.
  const { startWebhookWorker } = await import("../../http/webhooks/worker.ts");
  const webhooks = startWebhookWorker({ store, stats: webhookStats, log: (level, line) => log.line(level, redactSecrets(line)) });
  await stopOnSignal({ close: async () => (await Promise.all([server.close(), webhooks.stop()]), undefined) }, store, info);
  log.flush();
  return { exitCode: 0 };
}

/** `service-api serve`: flags, help text and `run`. */
export const command: CommandDef<ServeFlags> = {
  description: "Run the GraphQL service: POST /graphql with a bearer key, GET /healthz",
  options: [
    { flag: "--host <host>", help: "Interface to listen on (env HOST, default 127.0.0.1)" },
    { flag: "--port <port>", help: "Port, 0 for any free one (env PORT, default 3001)", numeric: true },
    { flag: "--no-explorer", help: "Do not serve the explorer (GraphiQL) to browsers at GET /graphql" },
    { flag: "--no-console", help: "Do not serve the web console at GET /console nor the consent page at GET /authorize" },
    { flag: "--no-auth-endpoint", help: "Do not answer reverse proxies' forward-authentication requests at /auth, nor Unkey's POST /v2/keys.verifyKey (see docs/gateways.md)" },
    {
      flag: "--cors-origin <origins>",
      help: "Browser origins allowed to call /graphql, comma-separated scheme://host[:port], or * (env SERVICE_API_CORS_ORIGINS, default none)",
    },
    {
      flag: "--metrics-allow <addresses>",
      help: "Addresses that may read /metrics without a key, comma-separated IPs or IPv4 CIDRs (env SERVICE_API_METRICS_ALLOW, default 127.0.0.1,::1); others need an INFO:READ_ANY key",
    },
    {
      flag: "--no-last-use",
      help: "Do not record when keys were last used (env SERVICE_API_LAST_USE=off); by default the first use is written within 5 s, then at most once a minute per key",
    },
    {
      flag: "--retired-retention <duration>",
      help: "How long a deleted or replaced key's secret is still recognised, to warn when it is presented again (env SERVICE_API_RETIRED_RETENTION, default 30d)",
    },
    {
      flag: "--auth-failure-limit <limit>",
      help: "Failed authentications allowed per client address, like 60/1m (several comma-separated), or off; past it 429 instead of 401, a valid key is always served (env SERVICE_API_AUTH_FAILURE_LIMIT, default 60/1m)",
    },
    {
      flag: "--trust-proxy <addresses>",
      help: "Reverse proxies whose X-Forwarded-For names the client, comma-separated IPs or CIDRs (env SERVICE_API_TRUST_PROXY, default none: the socket's address is the client)",
    },
  ],
  examples: ["service-api serve --port 3001", "service-api serve --trust-proxy 10.0.0.0/8 --auth-failure-limit 30/1m"],
  run: runServe,
};
