/**
 * The Redis connection every piece of the Redis backend shares: the ioredis client under unstorage's
 * Redis driver, and how its failures read.
 *
 * Redis going away must never hang a command or let a server answer from stale state: the
 * connection is opened eagerly with a deadline, commands are never queued while disconnected, a
 * command in flight when the connection drops fails at once, and every command has a timeout. The
 * client keeps reconnecting in the background, so a long-running server recovers by itself.
 *
 * Every failure becomes `STORE_UNAVAILABLE` naming the redacted URL and the latest cause, with the
 * URL's credentials scrubbed from every message.
 */
import type { Redis } from "ioredis";
import type { Driver } from "unstorage";
import redisDriver from "unstorage/drivers/redis";
import { isServiceError, ServiceError } from "../../core/errors.ts";
import { checkReplies, DESYNC_REASON, guardReplies, type Shape } from "./_redis-desync.ts";
import type { StoreTopology } from "../types.ts";
import { clientOptionsOf, type RedisSecrets } from "./_redis-options.ts";
import { clusterRefusal, readTopology } from "./_redis-topology.ts";
import { parseRedisUrl, redactRedisUrl, redisRedactor, type RedisTarget } from "./_redis-url.ts";

type Exec = Promise<[Error | null, unknown][] | null>;

/** The open connection, handed to the storage, the atomic index, the audit trail and the rate limiter. */
export interface RedisConnection {
  client: Redis;
  /** unstorage's Redis driver on `client`, under `prefix`. */
  driver: Driver<unknown, Redis>;
  prefix: string;
  /** Where the URL points. */
  target: RedisTarget;
  /** What the connection runs on now (see `StoreTopology`). */
  topology: () => Promise<StoreTopology>;
  /** The Redis key of a store key: `<prefix>:<key>`. */
  redisKey: (key: string) => string;
  /** The `STORE_UNAVAILABLE` error for `what` went wrong. */
  unavailable: (what: string, cause?: unknown) => ServiceError;
  /** Rethrows a failed command as `STORE_UNAVAILABLE` (a `ServiceError` as it is). */
  failure: (error: unknown) => never;
  /** `fn` with its rejections passed through `failure`. */
  wrap: <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A) => Promise<R>;
  /** Cuts a connection found out of step and returns the error to throw. */
  outOfStep: () => Error;
  /** The values of a MULTI's replies, each checked against its shape. */
  results: (exec: Exec, ...shapes: Shape[]) => Promise<unknown[]>;
  /** `value`, checked against its shape. */
  shaped: <T>(value: T, ok: Shape) => T;
}

const messageOf = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).replace(/[.\s]+$/, "");

/**
 * Connects to the Redis at `url` (one Redis, or the master of a Sentinel group), or rejects with
 * `STORE_UNAVAILABLE` within `connectTimeout` (`USAGE` for a URL that does not parse, or a cluster node).
 */
export async function openRedisConnection(
  url: string,
  { connectTimeout, commandTimeout, secrets = {} }: { connectTimeout: number; commandTimeout: number; secrets?: RedisSecrets },
): Promise<RedisConnection> {
  const where = redactRedisUrl(url);
  // Every message below goes through `scrub`: ioredis's own messages can carry pieces of a mistyped password.
  const scrub = redisRedactor(url);
  const reasonOf = (error: unknown) => scrub(messageOf(error));
  const target = parseRedisUrl(url);
  const { prefix } = target;

  let lastError = "";
  const unavailable = (what: string, cause?: unknown) =>
    new ServiceError(
      "STORE_UNAVAILABLE",
      `Key store unavailable: ${what} (${where}). Check that Redis is running and reachable and the URL is right, or set SERVICE_API_STORE.`,
      { cause },
    );

  const driver = redisDriver(clientOptionsOf(target, secrets, { connectTimeout, commandTimeout })) as Driver<unknown, Redis>;
  const client = driver.getInstance!() as Redis;
  // Without a listener ioredis prints every connection error to the console; keep the latest for messages.
  // After a desync, the errors of commands that die with the cut socket are not the cause: keep the desync.
  let desynced = false;
  client.on("error", (error: Error) => {
    if (!desynced) lastError = reasonOf(error);
  });
  client.on("connect", () => {
    desynced = false;
  });
  client.on("ready", () => {
    // Ready without a ready check can follow a cut of the same connection (a desync during its CLIENT SETINFO).
    if (!desynced) lastError = "";
  });
  // A reply out of turn cuts the connection (ioredis reconnects) instead of throwing from a socket event.
  const outOfStep = guardReplies(client, (reason) => {
    lastError = reason;
    desynced = true;
  });
  checkReplies(client, outOfStep);

  const misused = (what: string) => new ServiceError("USAGE", `Cannot use ${where} as a key store: ${what}`);
  await reachRedis(client, connectTimeout, (error) => unavailable(`cannot connect to Redis: ${lastError || reasonOf(error)}`), unavailable, misused);

  const failure = (error: unknown): never => {
    if (isServiceError(error)) throw error;
    // A command refused for a socket just cut (ioredis may still say "ready") failed for the cut's cause.
    const cut = /Stream isn't writeable|Connection is closed/.test(messageOf(error));
    const reason = client.status === "ready" && !cut ? reasonOf(error) : lastError || reasonOf(error);
    throw unavailable(`Redis request failed: ${reason}`);
  };
  const wrap = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A): Promise<R> =>
    fn(...args).catch(failure);
  const redisKey = (key: string) => `${prefix}:${key}`;
  const topology = () => readTopology(client, target).catch(failure);
  return { client, driver, prefix, target, topology, redisKey, unavailable, failure, wrap, outOfStep, ...replyChecks(outOfStep) };
}

/** Connects within `connectTimeout` and checks the server (no cluster node, 6.2 or later); disconnects and throws otherwise. */
async function reachRedis(
  client: Redis,
  connectTimeout: number,
  cannotConnect: (error: unknown) => Error,
  unavailable: (what: string) => Error,
  misused: (what: string) => Error,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${connectTimeout} ms`)), connectTimeout);
      }),
    ]);
  } catch (error) {
    client.disconnect();
    throw cannotConnect(error);
  } finally {
    clearTimeout(timer);
  }
  const info = await client.info().catch(() => ""); // a user without INFO: checked no further
  if (info && !info.includes("redis_version:")) {
    // Some other reply in place of INFO's: the connection is out of step from its first command.
    client.disconnect();
    throw cannotConnect(new Error(DESYNC_REASON));
  }
  const cluster = clusterRefusal(info);
  if (cluster) {
    client.disconnect();
    throw misused(cluster);
  }
  // SET ... GET and GETDEL arrived in 6.2; say so now rather than fail on the first overwrite or delete.
  const version = /redis_version:(\d+)\.(\d+)[.\d]*/.exec(info);
  if (version && Number(version[1]) * 100 + Number(version[2]) < 602) {
    client.disconnect();
    throw unavailable(`Redis ${version[0].slice("redis_version:".length)} is too old, 6.2 or later is needed`);
  }
}

/** Checks of replies' shapes; a wrong one cuts the connection through `outOfStep`. */
function replyChecks(outOfStep: () => Error): Pick<RedisConnection, "results" | "shaped"> {
  // A stray reply while commands are in flight shifts every answer by one, which ioredis cannot see: a
  // reply of the wrong shape is that, and must not read as "name taken" or "nothing there".
  const results = async (exec: Exec, ...shapes: Shape[]): Promise<unknown[]> => {
    const replies = await exec;
    if (!replies) throw outOfStep(); // EXEC answers null only after a WATCH, which is never sent
    for (const [error] of replies) if (error) throw error;
    const values = replies.map(([, value]) => value);
    if (values.length !== shapes.length || !shapes.every((ok, i) => ok(values[i]))) throw outOfStep();
    return values;
  };
  const shaped = <T>(value: T, ok: Shape): T => {
    if (!ok(value)) throw outOfStep();
    return value;
  };
  return { results, shaped };
}
