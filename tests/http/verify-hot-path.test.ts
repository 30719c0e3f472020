// The request path of remembered keys and answers (fs store): what it skips, and what it must never skip
// (the revision read, on the thread pool, that makes a revocation by another process, the CLI, show at once).
import { cpSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { listenNode } from "../../lib/http/node.ts";
import { openKeyStore, parseStoreSpec } from "../../lib/store/config.ts";
import type { KeyStore } from "../../lib/store/key-store.ts";
import { createServiceHandler } from "../../lib/http/handler.ts";
import { isRemembered, type ServiceRequest, type ServiceResponse } from "../../lib/http/types.ts";
import { AmendedResponse } from "../../lib/http/responses.ts";
import { tempDir } from "../helpers/cli.ts";

const { dir: root, cleanup } = tempDir("service-api-hot-path-");
afterAll(cleanup);
const open: KeyStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close?.();
});
let n = 0;
async function fsStore(dir = join(root, `store-${++n}`)): Promise<{ dir: string; store: KeyStore }> {
  const store = await openKeyStore(parseStoreSpec(dir), () => {});
  open.push(store);
  return { dir, store };
}
/** Another process's view of the same directory, as the CLI has. */
const cliOf = async (dir: string) => (await fsStore(dir)).store;
const input = (name: string) => ({ name, roles: ["ADMIN"], permissions: [] });
const isThenable = (value: unknown) => typeof (value as { then?: unknown } | null)?.then === "function";

/** A node server for `handle` with short timeouts. */
const listen = (handle: Parameters<typeof listenNode>[0], maxBodyBytes = 4096, maxConnections = 16) =>
  listenNode(handle, {
    host: "127.0.0.1", port: 0, maxBodyBytes, shutdownTimeoutMs: 1000, headersTimeoutMs: 5000,
    requestTimeoutMs: 5000, keepAliveTimeoutMs: 5000, maxConnections, onAcceptError: () => {},
  });

/**
 * Sends raw bytes in the given pieces, pausing 50 ms before each after the first; a function among them is
 * awaited instead of sent (something done between two pieces). Resolves to the whole answer.
 */
const send = (port: number, pieces: (string | (() => Promise<unknown>))[]) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let out = "";
    socket.on("data", (d) => (out += d));
    socket.on("end", () => resolve(out));
    socket.on("error", reject);
    socket.on("connect", async () => {
      for (const [i, piece] of pieces.entries()) {
        if (i) await new Promise((r) => setTimeout(r, 50));
        if (typeof piece === "string") socket.write(piece);
        else await piece();
      }
    });
  });

function request(secret: string, query = "{ me { id name } }"): ServiceRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}`, "content-type": "application/json" };
  const body = JSON.stringify({ query });
  return { method: "POST", url: "/graphql", headers: { get: (name) => headers[name] ?? null }, body: () => body };
}

describe("verify of a remembered key", () => {
  it("waits on the fs store's revision read, off the event loop: verifyNow and store.verify are promises", async () => {
    const { store } = await fsStore();
    const { key, id } = await store.create(input("a"));
    const verifyNow = store.verifyNow!.bind(store);
    const first = verifyNow(key);
    expect(isThenable(first)).toBe(true); // first time: the records are read
    await first;
    const hit = verifyNow(key);
    expect(isThenable(hit)).toBe(true); // remembered: only the revision is read, on the thread pool
    expect((await hit)?.id).toBe(id);
    expect(store.verify(key)).toBeInstanceOf(Promise);
  });

  /** A store with key "a" whose verification is remembered. */
  async function remembered() {
    const { dir, store } = await fsStore();
    const { key } = await store.create(input("a"));
    const verifyNow = store.verifyNow!.bind(store);
    await verifyNow(key);
    return { dir, key, verifyNow };
  }

  it("reads the revision on every call: a key deleted by another process is refused on the next one", async () => {
    const { dir, key, verifyNow } = await remembered();
    await (await cliOf(dir)).deleteByName("a");
    expect(await verifyNow(key)).toBeNull();
  });

  it("also after the store was moved aside and copied back", async () => {
    const { dir, key, verifyNow } = await remembered();
    renameSync(dir, `${dir}.aside`);
    cpSync(`${dir}.aside`, dir, { recursive: true, preserveTimestamps: true });
    await (await cliOf(dir)).deleteByName("a");
    expect(await verifyNow(key)).toBeNull();
    rmSync(`${dir}.aside`, { recursive: true, force: true });
  });
});

describe("the handler's remembered answer", () => {
  it("comes back the same, and a key deleted meanwhile by another process gets 401 at once", async () => {
    const { dir, store } = await fsStore();
    const { key } = await store.create(input("a"));
    const handle = createServiceHandler({ store, recordLastUse: false });
    const first = handle(request(key));
    expect(isThenable(first)).toBe(true);
    const computed = (await first) as ServiceResponse;
    expect(computed.status).toBe(200);
    const remembered = await handle(request(key));
    expect(remembered.body).toBe(computed.body);
    await (await cliOf(dir)).deleteByName("a");
    expect((await handle(request(key))).status).toBe(401);
    await handle.close();
  });
});

describe("the node adapter", () => {
  /** A server whose handler reports whether the body came whole (a string) or had to be awaited. */
  async function bodyProbe() {
    const seen: string[] = [];
    const handle = Object.assign((request: ServiceRequest) => {
      const body = request.body();
      const answer = (text: string | null) => ({ status: 200, headers: { "content-type": "text/plain" }, body: String(text) });
      if (typeof body === "string" || body === null) return (seen.push("whole"), answer(body));
      seen.push("awaited");
      return body.then(answer);
    }, { close: async () => {} });
    const server = await listen(handle, 1024, 10);
    return { server, seen };
  }
  const head = (length: number) => `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;

  it("hands the handler a body sent with the headers whole, without a promise; a later body is awaited", async () => {
    const { server, seen } = await bodyProbe();
    const body = JSON.stringify({ query: "{ me { id } }" });
    expect(await send(server.port, [head(body.length) + body])).toMatch(/\r\n\r\n\{"query/);
    expect(await send(server.port, [head(body.length), body])).toMatch(/\r\n\r\n\{"query/);
    expect(seen).toEqual(["whole", "awaited"]);
    await server.close();
  });
});

describe("the fast path, a property of the store", () => {
  it("is the store's own verifyNow, which a wrapper made by spreading the store goes without", async () => {
    const { store } = await fsStore();
    const { key, id } = await store.create(input("a"));
    await store.verifyNow!(key);
    expect((await store.verifyNow!(key))?.id).toBe(id);
    let verified = 0;
    const wrapped: KeyStore = { ...store, verify: (secret) => (verified++, store.verify(secret)) };
    expect(wrapped.verifyNow).toBeUndefined();
    const handle = createServiceHandler({ store: wrapped, recordLastUse: false });
    expect((await handle(request(key))).status).toBe(200);
    expect(verified).toBe(1); // the wrapper's verify, not a path around it
    await handle.close();
  });
});

describe("one revision read for the requests that arrived before it", () => {
  /** A request as an adapter hands it over, stamped with when its head arrived. */
  const stamped = (secret: string, receivedAt: number): ServiceRequest => ({ ...request(secret), receivedAt });

  it("serves a request that arrived before the last read from that read; one that arrived after reads again", async () => {
    const { dir, store } = await fsStore();
    const { key } = await store.create(input("a"));
    const handle = createServiceHandler({ store, recordLastUse: false });
    expect((await handle(request(key))).status).toBe(200); // remembered from now on
    const early = performance.now(); // a request whose head arrived here...
    expect((await handle(stamped(key, performance.now()))).status).toBe(200); // ...then this one reads the revision
    await (await cliOf(dir)).deleteByName("a"); // another process revokes the key
    // The early request arrived before that read began: it may be answered from it, since the revocation
    // came after it had arrived (a concurrent one); this is the read it shares.
    expect((await handle(stamped(key, early))).status).toBe(200);
    // Any request that arrived after the revocation finished is refused.
    expect((await handle(stamped(key, performance.now()))).status).toBe(401);
    expect((await handle(request(key))).status).toBe(401); // unstamped: reads for itself
    await handle.close();
  });

  it("over HTTP, under load from other clients, every request sent after a revocation by another process gets 401", async () => {
    const { dir, store } = await fsStore();
    const busy = await store.create(input("busy"));
    const handle = createServiceHandler({ store, recordLastUse: false });
    const server = await listen(handle, 4096, 64);
    const post = (secret: string) =>
      fetch(`${server.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "{ me { id name } }" }),
      }).then(async (r) => (await r.text(), r.status));
    let stop = false;
    // Other clients keep the server busy, so requests share turns of its event loop (and revision reads).
    const load = Promise.all(Array.from({ length: 8 }, async () => {
      while (!stop) expect(await post(busy.key)).toBe(200);
    }));
    const cli = await cliOf(dir);
    try {
      for (let round = 0; round < 25; round++) {
        const { key } = await store.create(input(`victim ${round}`));
        expect(await post(key)).toBe(200); // remembered by the server
        await cli.deleteByName(`victim ${round}`);
        expect(await post(key)).toBe(401);
      }
    } finally {
      stop = true;
      await load;
      await server.close();
      await handle.close();
    }
  });
});

describe("the head of a remembered answer", () => {
  const rawPost = (port: number, secret: string, close = false) =>
    new Promise<string>((resolve, reject) => {
      const body = JSON.stringify({ query: "{ me { id name } }" });
      const socket = connect(port, "127.0.0.1");
      let out = "";
      socket.on("data", (d) => {
        out += d;
        const end = out.indexOf("\r\n\r\n");
        const length = /content-length: (\d+)/i.exec(out)?.[1];
        if (end >= 0 && length !== undefined && Buffer.byteLength(out) >= end + 4 + Number(length)) socket.destroy(), resolve(out);
      });
      socket.on("error", reject);
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}${close ? "\r\nConnection: close" : ""}\r\n\r\n${body}`,
      );
    });
  const withoutDate = (text: string) => text.replace(/^date: .*\r\n/im, "");

  it("is the same bytes every time it is served, with the body's length", async () => {
    const { store } = await fsStore();
    const { key } = await store.create(input("ünïcödé"));
    const handle = createServiceHandler({ store, recordLastUse: false });
    const server = await listen(handle, 4096, 16);
    const first = await rawPost(server.port, key);
    const answers = [await rawPost(server.port, key), await rawPost(server.port, key)];
    for (const again of answers) expect(withoutDate(again)).toBe(withoutDate(first));
    const [head, body] = first.split("\r\n\r\n");
    expect(head).toMatch(new RegExp(`content-length: ${Buffer.byteLength(body)}\r`, "i"));
    expect(body).toContain("ünïcödé");
    await server.close();
    await handle.close();
  });
  it("for a key with a rate limit and credits, is the remembered head and this request's RateLimit lines, every time", async () => {
    const { store } = await fsStore();
    const { key } = await store.create({ ...input("limited"), rateLimits: [{ limit: 10, durationMs: 60_000 }], credits: { remaining: 100 } });
    const handle = createServiceHandler({ store, recordLastUse: false });
    const server = await listen(handle, 4096, 16);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await rawPost(server.port, key));
    const lines = (answer: string, name: string) => answer.split("\r\n").filter((line) => line.toLowerCase().startsWith(`${name}:`));
    // Each answer carries its own count, once, and the policy once: the kept head took none of them in.
    expect(answers.map((a) => lines(a, "ratelimit"))).toEqual([9, 8, 7, 6].map((left) => [`ratelimit: limit=10, remaining=${left}, reset=60`]));
    for (const a of answers) expect(lines(a, "ratelimit-policy")).toEqual(["ratelimit-policy: 10;w=60"]);
    const rest = (a: string) => withoutDate(a).replace(/^ratelimit: .*\r\n/im, "");
    for (const a of answers.slice(1)) expect(rest(a)).toBe(rest(answers[0]));
    const [head, body] = answers[3].split("\r\n\r\n");
    expect(head).toMatch(new RegExp(`content-length: ${Buffer.byteLength(body)}\r`, "i"));
    // And it is the remembered answer, amended: the path that reuses the kept head was the one taken.
    const served = (await handle(request(key))) as ServiceResponse;
    expect(served).toBeInstanceOf(AmendedResponse);
    expect(isRemembered((served as AmendedResponse).base)).toBe(true);
    expect(served.headers.ratelimit).toBe("limit=10, remaining=5, reset=60");
    await server.close();
    await handle.close();
  });
});

describe("a body that arrives after its head", () => {
  /** Sends a POST's head at once and its body only after `between()` has run; resolves to the answer. */
  const headThenBody = (port: number, secret: string, body: string, between: () => Promise<unknown>) =>
    send(port, [
      `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`,
      between, // after the server has read the head and checked the key
      body,
    ]);

  async function server() {
    const { dir, store } = await fsStore();
    const handle = createServiceHandler({ store, recordLastUse: false });
    const node = await listen(handle, 4096, 16);
    return { dir, store, node, close: async () => (await node.close(), await handle.close()) };
  }

  it("is run with the key as it stands when the body is in: a key deleted meanwhile by another process mints nothing", async () => {
    const { dir, store, node, close } = await server();
    const { key } = await store.create(input("victim"));
    const mutation = JSON.stringify({ query: 'mutation { apiKey { create(input: { name: "minted", roles: [ADMIN] }) { id key } } }' });
    const answer = await headThenBody(node.port, key, mutation, async () => (await cliOf(dir)).deleteByName("victim"));
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect((await store.list()).map((k) => k.name)).toEqual([]);
    await close();
  });

  it("sees an update finished before the body was sent: the permissions taken away are gone", async () => {
    const { dir, store, node, close } = await server();
    const { key, id } = await store.create({ name: "viewer", roles: ["VIEWER"], permissions: [] });
    const query = JSON.stringify({ query: "{ online me { roles } }" });
    const answer = await headThenBody(node.port, key, query, async () => (await cliOf(dir)).update(id, { roles: ["GUEST"] }));
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    expect(body.data).toEqual({ online: null, me: { roles: ["GUEST"] } });
    expect(body.errors[0].extensions.code).toBe("FORBIDDEN");
    await close();
  });
});
