/**
 * The `serve` command: its flags and help text, and its flow: resolve host, port and store like the
 * CLI does, listen, and on SIGTERM or SIGINT stop accepting, let requests in flight finish, close the
 * store, exit 0. The service itself (GraphQL, HTTP) is imported only when the command runs.
 */
import process from "node:process";
import { ServiceError } from "../../core/errors.ts";
import type { Output } from "../format.ts";
import type { CommandDef } from "../command.ts";
import { bindThenSettleAsOwner, openKeyStore, parseStoreSpec } from "../../store/config.ts";
import { resolveLogLevel } from "../../core/log.ts";
import { redactSecrets } from "../../core/secret.ts";
import { withStoreHint } from "../store-hint.ts";

export interface ServeFlags {
  host?: string;
  port?: string | number;
  store?: string;
  /** False with `--no-explorer`: browsers get the JSON answers, not GraphiQL. */
  explorer?: boolean;
  corsOrigin?: string;
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

/**
 * Runs the service until SIGTERM or SIGINT.
 * @example await runServe({ port: 0 }, { log: console.error })
 */
export async function runServe(
  flags: ServeFlags,
  io: { log: (line: string) => void; debug?: (line: string) => void; env?: Env },
): Promise<Output> {
  const env = io.env ?? process.env;
  const { level } = resolveLogLevel(env.LOG_LEVEL);
  const quiet = ["silent", "error", "warn"].includes(level);
  const silent = level === "silent";
  const info = (line: string) => quiet || io.log(line);
  const host = (flags.host ?? env.HOST ?? "").trim() || "127.0.0.1";
  const port = resolvePort(flags.port, env);
  const corsOrigins = resolveCorsOrigins(flags.corsOrigin, env);
  const { serve } = await import("../../http/serve.ts");
  const store = await openKeyStore(parseStoreSpec(flags.store, env), io.debug).catch((error) => {
    throw withStoreHint(error, flags.store, env);
  });
  let server;
  try {
    // Root on another user's store acts as that user (see the store's trust rules); a server binds its port
    // first, which may need root, then drops root for good.
    server = await bindThenSettleAsOwner(() => serve({
      store,
      host,
      port,
      explorer: flags.explorer !== false,
      corsOrigins,
      // The client got a generic 500; the operator gets the message (and the stack at LOG_LEVEL=debug).
      onError: (error) => {
        io.log(`internal error: ${redactSecrets(error instanceof Error ? error.message : String(error))}`);
        if (error instanceof Error && error.stack) io.debug?.(redactSecrets(error.stack));
      },
      // Why the service answers 503, once per outage (at error level), and its end once (info).
      storeStatus: { down: (line) => silent || io.log(`error: ${line}`), up: info },
    }));
  } catch (error) {
    await store.close();
    throw error;
  }
  info(`service-api listening on ${server.url} (POST ${server.url}/graphql, GET ${server.url}/healthz)`);
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  info(`${signal}: finishing requests in flight, then stopping`);
  await server.close();
  await store.close();
  info("stopped");
  return { exitCode: 0 };
}

/** `service-api serve`: flags, help text and `run`. */
export const command: CommandDef<ServeFlags> = {
  description: "Run the GraphQL service: POST /graphql with a bearer key, GET /healthz",
  options: [
    { flag: "--host <host>", help: "Interface to listen on (env HOST, default 127.0.0.1)" },
    { flag: "--port <port>", help: "Port, 0 for any free one (env PORT, default 3001)", numeric: true },
    { flag: "--no-explorer", help: "Do not serve the explorer (GraphiQL) to browsers at GET /graphql" },
    {
      flag: "--cors-origin <origins>",
      help: "Browser origins allowed to call /graphql, comma-separated scheme://host[:port], or * (env SERVICE_API_CORS_ORIGINS, default none)",
    },
  ],
  examples: ["service-api serve --port 3001"],
  run: runServe,
};
