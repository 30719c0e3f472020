// A Redis connection that gets out of step (a reply no command asked for, or garbage) is a lost
// connection: the server answers 503 and reconnects by itself, the CLI exits 1 with one line. Never an
// uncaught exception from ioredis's reply handling. The stray reply is injected by a TCP proxy sitting
// between a real redis-server and the process under test.
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.ts";
import { type RedisServer, startRedis } from "../helpers/redis.ts";
import { gql, type ServerProcess, startServer } from "../helpers/server.ts";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";

const ME = "{ me { id name } }";

interface Proxy {
  port: number;
  /** Writes `bytes` to every client connection, as if Redis had sent them. */
  inject(bytes: string): void;
  /** Puts `bytes` in front of the next reply Redis sends, so a command in flight gets it. */
  prefixNextReply(bytes: string): void;
  close(): Promise<void>;
}

/** Listens on a free port and pipes every connection to `targetPort`. */
function startProxy(targetPort: number): Promise<Proxy> {
  const clients = new Set<Socket>();
  let prefix = "";
  const server: Server = createServer((client) => {
    const upstream = new (client.constructor as typeof Socket)();
    upstream.connect(targetPort, "127.0.0.1");
    clients.add(client);
    client.pipe(upstream);
    upstream.on("data", (data: Buffer) => {
      if (prefix) client.write(prefix), (prefix = "");
      client.write(data);
    });
    const end = () => {
      clients.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { port: number }).port,
        inject: (bytes) => {
          for (const client of clients) client.write(bytes);
        },
        prefixNextReply: (bytes) => void (prefix = bytes),
        close: () => {
          for (const client of clients) client.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      })
    )
  );
}

/** A "Redis" that answers every connection with replies to nothing, then garbage. */
function startGarbageServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {}).on("close", () => sockets.delete(socket));
    socket.write("+OK\r\n+OK\r\n+OK\r\n$-1\r\n*2\r\n:1\r\n");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { port: number }).port,
        close: () => {
          for (const socket of sockets) socket.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      })
    )
  );
}

let redis: RedisServer;
let proxy: Proxy;
let server: ServerProcess;
let key: string;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startProxy(redis.port);
  const store = `redis://127.0.0.1:${proxy.port}/0?prefix=desync`;
  const created = await runCli(["apikey", "--create", "--name", "desync", "--roles", "VIEWER", "--json"], {
    env: { SERVICE_API_STORE: `${redis.url}?prefix=desync` },
  });
  expect(created.code, created.stderr).toBe(0);
  key = JSON.parse(created.stdout).key;
  server = await startServer({ store });
});

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await redis?.destroy();
});

describe("a Redis connection out of step", () => {
  it("a reply nobody asked for costs the server its connection, not its life: 503 meanwhile, then 200 again", async () => {
    expect((await gql(server.url, ME, { key })).status).toBe(200);
    for (const stray of ["$-1\r\n", "+OK\r\n", ":1\r\n", "-ERR stray\r\n"]) {
      proxy.inject(stray);
      await new Promise((r) => setTimeout(r, 100));
      const deadline = Date.now() + 10_000;
      let status = 0;
      while (Date.now() < deadline) {
        ({ status } = await gql(server.url, ME, { key }));
        expect([200, 503]).toContain(status);
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(status, `after ${JSON.stringify(stray)}: ${server.stderr()}`).toBe(200);
      expect(server.child.exitCode, server.stderr()).toBeNull();
    }
    expect(server.stderr()).not.toMatch(/TypeError|\n\s+at /);
  });

  it("a stray reply in the middle of 40 concurrent requests leaves the server running", async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        if (i === 20) proxy.inject("$-1\r\n");
        return (await gql(server.url, ME, { key })).status;
      }),
    );
    for (const status of results) expect([200, 401, 503]).toContain(status);
    expect(server.child.exitCode, server.stderr()).toBeNull();
  });
});

describe("a stray reply while a command waits for its own", () => {
  // A stray reply of the very shape the command expects (an integer for EXISTS) cannot be told from its
  // own; that one command may then be refused (NAME_TAKEN), but nothing half-made or unusable is left.
  it("a create completes with a working secret or fails (STORE_UNAVAILABLE, or a refusal), never leaving a half key", async () => {
    const url = `redis://127.0.0.1:${proxy.port}/0?prefix=desync-create`;
    const store = await openKeyStore(parseStoreSpec(undefined, { SERVICE_API_STORE: url }));
    try {
      for (const [i, stray] of ["$-1\r\n", "+OK\r\n", ":1\r\n", "*2\r\n:1\r\n$3\r\nabc\r\n"].entries()) {
        for (let round = 0; round < 6; round++) {
          await expect.poll(() => store.list().then(() => true, () => false), { timeout: 10_000 }).toBe(true);
          const name = `fresh ${i} ${round}`;
          proxy.prefixNextReply(stray);
          const outcome = await store.create({ name, roles: ["GUEST"], permissions: [] }).then(
            (created) => created,
            (error) => error as { code?: string },
          );
          await expect.poll(() => store.list().then(() => true, () => false), { timeout: 10_000 }).toBe(true);
          if ("key" in outcome) {
            expect((await store.verify(outcome.key))?.name, JSON.stringify(stray)).toBe(name);
          } else {
            // Only a stray integer looks like a real EXISTS answer; any other shape is caught as out of step.
            const allowed = stray === ":1\r\n" ? ["STORE_UNAVAILABLE", "NAME_TAKEN"] : ["STORE_UNAVAILABLE"];
            expect(allowed, `${JSON.stringify(stray)}: ${String(outcome)}`).toContain(outcome.code);
            const left = (await store.list()).filter((k) => k.name === name);
            // A create cut off midway may have finished on the server: then the key is whole.
            for (const key of left) expect(await store.getByName(name)).toMatchObject({ id: key.id });
          }
        }
      }
    } finally {
      await store.close();
    }
  });
});

describe("a server that speaks garbage", () => {
  let garbage: { port: number; close: () => Promise<void> };
  beforeAll(async () => {
    garbage = await startGarbageServer();
  });
  afterAll(() => garbage?.close());

  it("the CLI exits 1 with one line naming the store as unavailable, no stack trace", async () => {
    const result = await runCli(["apikey", "--list"], {
      env: { SERVICE_API_STORE: `redis://127.0.0.1:${garbage.port}/0` },
    });
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr.trim().split("\n"), result.stderr).toHaveLength(1);
    expect(result.stderr).toMatch(/Key store unavailable: .*out of step/);
    expect(result.stderr).not.toMatch(/TypeError|\n\s+at /);
  });

  it("with --json the CLI prints one JSON object with code STORE_UNAVAILABLE", async () => {
    const result = await runCli(["apikey", "--list", "--json"], {
      env: { SERVICE_API_STORE: `redis://127.0.0.1:${garbage.port}/0` },
    });
    expect(result.code, result.stderr).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ code: "STORE_UNAVAILABLE" });
    expect(result.stderr).not.toMatch(/TypeError|\n\s+at /);
  });
});
