// The service's log as an operator reads it (`service-api serve` as a child process): one access line per
// request with method, path (no query string), status, duration and the key's id and name; JSON lines
// with LOG_FORMAT=json, for the service's other lines too; failed authentications as rate-limited
// warnings; and never a secret, at any level.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cliWithStore, ROOT } from "../helpers/cli.ts";
import { gql, startServer } from "../helpers/server.ts";
import { createServiceLog, FLUSH_BYTES, FLUSH_MS } from "../../lib/http/service-log.ts";
import { generateSecret } from "../../lib/core/secret.ts";

const ME = "{ me { id name } }";
let env: ReturnType<typeof cliWithStore>;
let key: { key: string; id: string; name: string };
let revoked: string;

beforeAll(async () => {
  env = cliWithStore();
  const created = await env.cli("apikey", "--create", "--name", "watcher one", "--roles", "VIEWER", "--json");
  expect(created.code, created.stderr).toBe(0);
  key = JSON.parse(created.stdout);
  const gone = await env.cli("apikey", "--create", "--name", "gone", "--roles", "GUEST", "--json");
  revoked = JSON.parse(gone.stdout).key;
  expect((await env.cli("apikey", "--delete", "--name", "gone")).code).toBe(0);
});
afterAll(() => env.cleanup());

/** Runs a server with `extraEnv`, sends the everyday requests (good key, bad keys, a query string), returns its stderr. */
async function logOf(extraEnv: Record<string, string>): Promise<string> {
  const server = await startServer({ store: env.store, env: extraEnv });
  try {
    expect((await gql(server.url, ME, { key: key.key })).status).toBe(200);
    // A query string may carry a query and variables: it must not reach the log.
    const get = await fetch(`${server.url}/graphql?query=${encodeURIComponent(ME)}&variables=%7B%22secret%22%3A1%7D`, {
      headers: { authorization: `Bearer ${key.key}`, accept: "application/json" },
    });
    expect(get.status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await gql(server.url, ME, { key: "sapi_not-a-real-key" })).status).toBe(401);
    // Well formed, but revoked: an "unknown" failure.
    expect((await gql(server.url, ME, { key: revoked })).status).toBe(401);
    await gql(server.url, ME);
    await fetch(`${server.url}/healthz`);
    // A key pasted into the path by mistake: a 404 whose line does not echo it.
    await fetch(`${server.url}/graphql/${key.key}`);
  } finally {
    await server.stop();
  }
  return server.stderr();
}

describe("access log", () => {
  it("writes one text line per request, without the query string, with the key's id and name", async () => {
    const log = await logOf({});
    const access = log.split("\n").filter((l) => /^(GET|POST) /.test(l));
    expect(access).toHaveLength(26);
    expect(access.at(-1)).toMatch(/^GET \/graphql\/sapi_… 404 [\d.]+ms$/);
    expect(access[0]).toMatch(new RegExp(`^POST /graphql 200 \\d+(\\.\\d+)?ms key=${key.id} name="watcher one"$`));
    expect(access[1]).toMatch(new RegExp(`^GET /graphql 200 [\\d.]+ms key=${key.id} name="watcher one"$`));
    expect(access[2]).toMatch(/^POST \/graphql 401 [\d.]+ms$/);
    expect(access.at(-2)).toMatch(/^GET \/healthz 200 [\d.]+ms$/);
    expect(log).not.toContain("variables");
    expect(log).not.toContain("me {");
  });

  it("a burst's lines all arrive by the time SIGTERM has stopped the server, though written in batches", async () => {
    const server = await startServer({ store: env.store, env: {} });
    const statuses = await Promise.all(Array.from({ length: 60 }, () => gql(server.url, ME, { key: key.key }).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    await server.stop(); // at once: within FLUSH_MS of the last answer
    const access = server.stderr().split("\n").filter((l) => l.startsWith("POST /graphql 200 "));
    expect(access).toHaveLength(60);
  });

  it("warns about failed authentications at most once per reason in 10 s", async () => {
    const log = await logOf({});
    const warnings = log.split("\n").filter((l) => l.startsWith("warn: authentication failed"));
    expect(warnings).toEqual([
      "warn: authentication failed: malformed API key or Authorization header",
      "warn: authentication failed: unknown or revoked API key",
      "warn: authentication failed: no API key",
    ]);
  });

  it("with LOG_FORMAT=json writes JSON lines only, the service's own lines too", async () => {
    const log = await logOf({ LOG_FORMAT: "json" });
    const all = log.trim().split("\n").map((l) => JSON.parse(l));
    // First the store it serves, then where it listens.
    expect(all[0]).toMatchObject({ level: "info", msg: expect.stringMatching(/^serving store fs:/) });
    const lines = all.slice(1);
    expect(lines[0]).toMatchObject({ level: "info", msg: expect.stringContaining("listening on http://") });
    expect(lines[1]).toMatchObject({ level: "info", msg: "request", method: "POST", path: "/graphql", status: 200, keyId: key.id, keyName: "watcher one" });
    expect(typeof lines[1].ms).toBe("number");
    expect(new Date(lines[1].time).toISOString()).toBe(lines[1].time);
    expect(lines[2]).toMatchObject({ method: "GET", path: "/graphql", status: 200 });
    const warnings = lines.filter((l) => l.level === "warn");
    expect(warnings.filter((l) => l.reason).map((l) => l.reason)).toEqual(["malformed", "unknown", "missing"]);
    // The revoked key was deleted: its comeback is reported too, naming the key and never its secret.
    expect(warnings.filter((l) => !l.reason)).toEqual([expect.objectContaining({ keyName: "gone", address: "127.0.0.1" })]);
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "stopped" });
  });

  it.each([{ LOG_LEVEL: "warn" }, { LOG_LEVEL: "error", LOG_FORMAT: "json" }])("tells the port the system chose at a quiet level too (%o)", async (extra) => {
    // `serve --port 0` (startServer) learns its URL from the listening line: without it the port is unknown.
    const log = await logOf(extra);
    const lines = log.trim().split("\n");
    const listening = lines.filter((l) => l.includes("listening on http://127.0.0.1:"));
    expect(listening).toHaveLength(1);
    if (extra.LOG_FORMAT) expect(JSON.parse(listening[0])).toMatchObject({ level: "info" });
    // Still quiet otherwise: no access line, no stopping lines.
    expect(lines.filter((l) => /^(GET|POST) |"msg":"request"|stopping|stopped/.test(l))).toEqual([]);
  });

  it("keeps serving when the reader of its stderr goes away (EPIPE)", async () => {
    const server = await startServer({ store: env.store });
    try {
      server.child.stderr!.destroy(); // the log's reader is gone
      for (let i = 0; i < 6; i++) {
        expect((await gql(server.url, ME, { key: key.key })).status).toBe(200);
        await new Promise((r) => setTimeout(r, FLUSH_MS + 20)); // each line's batch is written, and fails
      }
      expect(server.child.exitCode).toBeNull();
    } finally {
      await server.stop();
    }
  });

  it.each([{}, { LOG_LEVEL: "debug" }, { LOG_LEVEL: "trace", LOG_FORMAT: "json" }])("never logs a secret (%o)", async (extra) => {
    const log = await logOf(extra);
    expect(log).toMatch(/\/graphql 200|"status":200/);
    if (extra.LOG_FORMAT) for (const line of log.trim().split("\n")) JSON.parse(line); // debug lines too
    expect(log).not.toContain(key.key);
    expect(log).not.toContain(revoked);
    expect(log).not.toContain(key.key.slice(5, 25)); // nor a part of it
    expect(log).not.toContain("sapi_not-a-real-key");
    expect(log).not.toMatch(/sapi_[A-Za-z0-9]{10,}/);
  });

});

describe("createServiceLog", () => {
  it("batches the lines of a burst into one write after FLUSH_MS, and counts suppressed warnings", async () => {
    const writes: string[] = [];
    const log = createServiceLog({ env: {}, write: (t) => writes.push(t), authWarnEveryMs: 50 });
    for (let i = 0; i < 3; i++) log.request({ method: "GET", path: "/healthz", status: 200, ms: 0.123456, operation: "none" });
    await new Promise((r) => setImmediate(r));
    // Lines of later turns join the same batch: not one write per turn of the event loop.
    for (let i = 0; i < 5; i++) log.authFailed("unknown");
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual([]);
    await new Promise((r) => setTimeout(r, FLUSH_MS + 30));
    expect(writes).toHaveLength(1);
    expect(writes[0].split("\n").filter(Boolean)).toEqual([
      "GET /healthz 200 0.12ms",
      "GET /healthz 200 0.12ms",
      "GET /healthz 200 0.12ms",
      "warn: authentication failed: unknown or revoked API key",
    ]);
    await new Promise((r) => setTimeout(r, 60));
    log.authFailed("unknown");
    log.flush();
    expect(writes[1]).toBe("warn: authentication failed: unknown or revoked API key (4 more since the last such line)\n");
    await new Promise((r) => setTimeout(r, FLUSH_MS + 30));
    expect(writes).toHaveLength(2); // flush() cancelled the timer: nothing written twice, no empty write
  });

  it("writes at once when a batch passes FLUSH_BYTES", () => {
    const writes: string[] = [];
    const log = createServiceLog({ env: {}, write: (t) => writes.push(t) });
    const path = "/" + "p.".repeat(499) + "p"; // no long run of letters: those are redacted as secret-like
    let lines = 0;
    while (!writes.length) log.request({ method: "GET", path, status: 404, ms: 1, operation: "none" }), lines++;
    expect(writes[0].length).toBeGreaterThanOrEqual(FLUSH_BYTES);
    expect(writes[0].split("\n").filter(Boolean)).toHaveLength(lines);
    expect(lines).toBeLessThan(FLUSH_BYTES / 1000 + 2);
  });

  it("counts FLUSH_BYTES in UTF-8 bytes and writes every line whole and in order, long and non-ASCII ones too", () => {
    const writes: string[] = [];
    const log = createServiceLog({ env: {}, write: (t) => writes.push(t) });
    const sent: string[] = [];
    const send = (path: string) => {
      log.request({ method: "GET", path, status: 404, ms: 1, operation: "none" });
      sent.push(`GET ${JSON.stringify(path).slice(1, -1)} 404 1ms`);
    };
    send("/" + "é".repeat(300)); // 2 bytes each in UTF-8
    send("/\u{1F511}/\ud800/ключ"); // an astral character, a lone surrogate (written as U+FFFD) and Cyrillic
    send("/" + "x.".repeat(20_000)); // longer than a batch: written alone, after what came before
    send("/after");
    while (writes.length < 3) send("/" + "ü".repeat(999));
    log.flush();
    expect(writes.join("")).toBe(sent.map((line) => line.replace("\ud800", "\uFFFD") + "\n").join(""));
    expect(writes[1]).toBe(sent[2] + "\n");
    // A batch of two-byte characters is written at FLUSH_BYTES bytes, i.e. about half as many characters.
    const full = writes.find((w) => w.includes("ü"))!;
    expect(Buffer.byteLength(full)).toBeGreaterThanOrEqual(FLUSH_BYTES);
    expect(full.length).toBeLessThan(FLUSH_BYTES * 0.6);
  });

  it("holds pending lines outside the JS heap (strings waiting for a flush made every GC pause longer)", () => {
    // A heap snapshot of a child process, taken while 700 lines wait for a flush, must hold none of them as a
    // string. (Reading heapUsed before and after a burst did not work: the vitest worker's own traffic and
    // V8's page bookkeeping moved it by ±200 KB, more than the lines themselves.)
    const module = pathToFileURL(join(ROOT, "dist/lib/http/service-log.js")).href;
    const script = `const { getHeapSnapshot } = await import("node:v8");
      const { createServiceLog } = await import(${JSON.stringify(module)});
      const writes = [];
      const log = createServiceLog({ env: {}, write: (t) => writes.push(t) });
      const key = { id: "k".repeat(32), name: "a key with a name" };
      for (let i = 0; i < 700; i++) log.request({ method: "POST", path: "/graphql", status: 200, ms: i / 100, operation: "query", key });
      const flushedBefore = writes.length;
      const chunks = [];
      for await (const chunk of getHeapSnapshot()) chunks.push(chunk);
      const { strings } = JSON.parse(Buffer.concat(chunks).toString());
      const linesInHeap = strings.filter((s) => s.includes("/graphql") && s.includes(key.id)).length;
      log.flush();
      process.stdout.write(JSON.stringify({ flushedBefore, linesInHeap, written: writes.join("").split("\\n").length - 1 }));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(child.stderr).toBe("");
    // Nothing was written during the burst, the 700 lines were pending, and none of them was a string in the heap.
    expect(JSON.parse(child.stdout)).toEqual({ flushedBefore: 0, linesInHeap: 0, written: 700 });
  });

  it.each([
    ["process.exit()", "process.exit(0)"],
    ["an uncaught exception", "throw new Error('fatal')"],
    ["the event loop running empty", ""],
  ])("writes pending lines when the process ends by %s", async (_, end) => {
    const module = pathToFileURL(join(ROOT, "dist/lib/http/service-log.js")).href;
    const script = `const { createServiceLog } = await import(${JSON.stringify(module)});
      const log = createServiceLog({ env: {} });
      for (let i = 0; i < 3; i++) log.request({ method: "GET", path: "/healthz", status: 200, ms: i, operation: "none" });
      ${end}`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 10_000 });
    expect(child.stderr).toContain("GET /healthz 200 0ms\nGET /healthz 200 1ms\nGET /healthz 200 2ms\n");
  });

  it.each([{}, { LOG_FORMAT: "json" }])("never writes a secret's body from a path, however the path spells it (%o)", (extra) => {
    const key = generateSecret();
    const body = key.slice("sapi_".length);
    const paths = [
      `/graphql/${key}`,
      `/sapi%5F${body}`,
      `/sapi%5f${body}`,
      `/%73api_${body}`,
      `/${body}`,
      `/graphql/${body}.js`,
      `/x/${body.slice(0, 16)}`, // a part of one
      `/${body.slice(0, 10)}%4${body.slice(10)}`, // a stray % does not hide the rest
    ];
    const writes: string[] = [];
    const log = createServiceLog({ env: extra, write: (t) => writes.push(t) });
    for (const path of paths) log.request({ method: "GET", path, status: 404, ms: 1, operation: "none" });
    log.request({ method: "GET", path: "/explorer.SNEAMU6P.js", status: 200, ms: 1, operation: "none" });
    log.flush();
    const text = writes.join("");
    expect(text.trim().split("\n")).toHaveLength(paths.length + 1);
    for (let at = 0; at + 12 <= body.length; at++) expect(text).not.toContain(body.slice(at, at + 12));
    expect(text).toContain("/graphql/sapi_…");
    expect(text).toContain("/explorer.SNEAMU6P.js"); // the service's own paths are left alone
  });

  it("announce() writes at every level but silent", () => {
    for (const [level, written] of [["error", 1], ["warn", 1], ["info", 1], ["silent", 0]] as const) {
      const writes: string[] = [];
      const log = createServiceLog({ env: { LOG_LEVEL: level }, write: (t) => writes.push(t) });
      log.announce("listening on port 41234");
      log.line("info", "an ordinary info line");
      log.flush();
      expect(writes.join("").split("\n").filter((l) => l.includes("41234")), level).toHaveLength(written);
    }
  });

  it("LOG_LEVEL=warn keeps the warnings and drops the access lines", () => {
    const writes: string[] = [];
    const log = createServiceLog({ env: { LOG_LEVEL: "warn" }, write: (t) => writes.push(t) });
    log.request({ method: "GET", path: "/healthz", status: 200, ms: 1, operation: "none" });
    log.authFailed("missing");
    log.line("info", "listening");
    log.flush();
    expect(writes).toEqual(["warn: authentication failed: no API key\n"]);
  });

  it("a path with a control character or a quote cannot forge a line", () => {
    const writes: string[] = [];
    const log = createServiceLog({ env: {}, write: (t) => writes.push(t) });
    log.request({ method: "GET", path: "/x\nPOST /graphql 200 1ms key=forged", status: 404, ms: 1, operation: "none" });
    log.request({ method: "GET", path: "/x\nPOST /graphql 200 1ms key=forged", status: 404, ms: 1, operation: "none" }); // the same path again
    const quoted = { id: "i", name: 'a" key=x' };
    log.request({ method: "POST", path: "/graphql", status: 200, ms: 1, operation: "query", key: quoted });
    log.request({ method: "POST", path: "/graphql", status: 200, ms: 1, operation: "query", key: quoted }); // the same key object again
    log.request({ method: "POST", path: "/graphql", status: 200, ms: 1, operation: "query", key: { id: "j", name: "b\nGET / 200 1ms" } });
    log.flush();
    const lines = writes.join("").trim().split("\n");
    expect(lines).toEqual([
      "GET /x\\nPOST /graphql 200 1ms key=forged 404 1ms",
      "GET /x\\nPOST /graphql 200 1ms key=forged 404 1ms",
      'POST /graphql 200 1ms key=i name="a\\" key=x"',
      'POST /graphql 200 1ms key=i name="a\\" key=x"',
      'POST /graphql 200 1ms key=j name="b\\nGET / 200 1ms"',
    ]);
  });
});
