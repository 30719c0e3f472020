// A real redis-server for the tests, on a free loopback port, by default without persistence; stopped afterwards.
// CI installs the Debian package (`apt-get install -y redis-server`). When it is missing the tests fail
// with that instruction instead of skipping, so a green run always means Redis was exercised.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

export interface RedisServer {
  /** `redis://127.0.0.1:<port>/0` */
  url: string;
  port: number;
  /** Stops the server (SIGTERM, then SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
  /** Stops it for good and removes its data directory (use in afterAll with `persist`). */
  destroy(): Promise<void>;
  /** Starts it again on the same port (empty unless `persist`) and waits until it answers PING. */
  start(): Promise<void>;
}

export interface StartRedisOptions {
  /** Keep the data across stop/start (append-only file, fsync always, in a temp dir removed by `destroy`). */
  persist?: boolean;
  /** More redis-server arguments (`--cluster-enabled yes`, TLS ports and files, ACLs). */
  args?: string[];
}

/** Path of an executable on PATH or in /usr/bin, /usr/local/bin, /usr/sbin; null when there is none. */
function findBinary(name: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(delimiter).filter(Boolean), "/usr/bin", "/usr/local/bin", "/usr/sbin"];
  for (const dir of dirs) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // try the next directory
    }
  }
  return null;
}

/** Path of the redis-server binary: on PATH, else /usr/bin or /usr/local/bin; throws a clear error when absent. */
export function findRedisServer(): string {
  const found = findBinary("redis-server");
  if (found) return found;
  throw new Error(
    "redis-server not found on PATH or in /usr/bin: the Redis tests need a real server. " +
      "Install it with `apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis`.",
  );
}

/** A TCP port that was free a moment ago (bind port 0, read it, release it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Sends one inline command (after `AUTH <password>` when given) and resolves with the raw reply, or rejects
 * when nothing answers.
 */
export function redisCommand(port: number, command: string, timeoutMs = 1_000, password?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let reply = "";
    const timer = setTimeout(() => socket.destroy(new Error(`no reply from 127.0.0.1:${port}`)), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${password ? `AUTH ${password}\r\n` : ""}${command}\r\n`));
    socket.on("data", (data) => {
      reply += data;
      if (password && reply.startsWith("+OK\r\n")) reply = reply.slice(5), (password = undefined);
      if (!password && reply.endsWith("\r\n")) socket.end();
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(reply);
    });
  });
}

async function waitForPing(port: number, child: ChildProcess, log: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}:\n${log()}`);
    try {
      if ((await redisCommand(port, "PING", 500)).startsWith("+PONG")) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms:\n${log()}`);
}

/**
 * Starts a private redis-server on a free loopback port.
 * @example const redis = await startRedis(); afterAll(() => redis.stop());
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const binary = findRedisServer();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "service-api-redis-"));
  const persistence = options.persist ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"];
  let child: ChildProcess | undefined;

  const start = async () => {
    mkdirSync(dir, { recursive: true });
    let log = "";
    const proc = spawn(
      binary,
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", ...persistence, "--dir", dir, "--loglevel", "warning", ...(options.args ?? [])],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    proc.stdout!.setEncoding("utf8").on("data", (d) => (log += d));
    proc.stderr!.setEncoding("utf8").on("data", (d) => (log += d));
    child = proc;
    await waitForPing(port, proc, () => log);
  };

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 3_000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    start,
    stop: async () => {
      await stop();
      if (!options.persist) rmSync(dir, { recursive: true, force: true });
    },
    /** Stops the server and removes its data directory. */
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Path of redis-sentinel (on PATH or in /usr/bin), or null when it is not installed. */
export const findRedisSentinel = (): string | null => findBinary("redis-sentinel");

export interface SentinelGroup {
  /** The sentinels' own password (requirepass), when they were given one. */
  sentinelPassword?: string;
  /** Sends a command to the first sentinel (authenticated) and resolves with the raw reply. */
  sentinel(command: string): Promise<string>;
  /** The master's name the sentinels monitor. */
  name: string;
  master: RedisServer;
  replica: RedisServer;
  /** The sentinels' ports. */
  sentinels: number[];
  /** `redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<name>/0` */
  url: string;
  /** The port of the master the sentinels name now. */
  masterPort(): Promise<number>;
  /** Stops every process and removes their directories. */
  destroy(): Promise<void>;
}

/** Polls `check` every 100 ms until it returns true; throws with `what` after `timeoutMs`. */
export async function pollUntil(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A redis-server replicating `master`, resolved once it is in sync. */
export async function startReplica(master: RedisServer, options: StartRedisOptions = {}): Promise<RedisServer> {
  const replica = await startRedis({ ...options, args: ["--replicaof", "127.0.0.1", String(master.port), ...(options.args ?? [])] });
  try {
    await pollUntil("the replica in sync", async () => /master_link_status:up/.test(await redisCommand(replica.port, "INFO replication")));
  } catch (error) {
    await replica.destroy();
    throw error;
  }
  return replica;
}

/**
 * A master, a replica of it and three redis-sentinel processes watching it (quorum 2), on free loopback ports;
 * resolves once the replica is in sync and every sentinel knows the replica and the other sentinels.
 */
export async function startSentinelGroup(name = "main", sentinelPassword?: string): Promise<SentinelGroup> {
  const binary = findRedisSentinel();
  if (!binary) throw new Error("redis-sentinel not found: install it with `apt-get install -y redis-sentinel`");
  const master = await startRedis({ persist: true });
  const replica = await startReplica(master, { persist: true });
  const dir = mkdtempSync(join(tmpdir(), "service-api-sentinel-"));
  const sentinels: number[] = [];
  const children: ChildProcess[] = [];
  const destroy = async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all([master.destroy(), replica.destroy()]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const config = join(dir, `sentinel-${i}.conf`);
      writeFileSync(config, [
        `port ${port}`, "bind 127.0.0.1", `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
        `sentinel down-after-milliseconds ${name} 10000`, // the tests fail over on purpose; a stalled machine must not
        `sentinel failover-timeout ${name} 10000`,
        ...(sentinelPassword ? [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`] : []),
      ].join("\n") + "\n");
      const child = spawn(binary, [config], { stdio: "ignore" });
      children.push(child);
      sentinels.push(port);
    }
    for (const port of sentinels) {
      await pollUntil(`sentinel ${port} sees the replica and the other sentinels`, async () => {
        const replicas = await redisCommand(port, `SENTINEL REPLICAS ${name}`, 1_000, sentinelPassword);
        const others = await redisCommand(port, `SENTINEL SENTINELS ${name}`, 1_000, sentinelPassword);
        return replicas.includes(String(replica.port)) && /^\*2\r\n/.test(others);
      });
    }
  } catch (error) {
    await destroy();
    throw error;
  }
  const sentinel = (command: string) => redisCommand(sentinels[0], command, 1_000, sentinelPassword);
  const masterPort = async () => {
    const reply = await sentinel(`SENTINEL GET-MASTER-ADDR-BY-NAME ${name}`);
    return Number(reply.trim().split("\r\n").at(-1));
  };
  const url = `redis+sentinel://${sentinels.map((port) => `127.0.0.1:${port}`).join(",")}/${name}/0`;
  return { name, sentinelPassword, sentinel, master, replica, sentinels, url, masterPort, destroy };
}
