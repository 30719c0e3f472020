// The explorer: a browser's GET /graphql gets GraphiQL with an API-key field, served from the built
// dist/explorer/ (precompressed, cached, no CDN), loaded only on a browser's first request. Driven in
// Debian's headless Chromium through playwright-core; CI installs /usr/bin/chromium, so a missing
// browser fails the test rather than skipping it.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, tempDir } from "../helpers/cli.ts";
import { startServer, startTracedServer } from "../helpers/server.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { serve, type RunningServer } from "../../lib/http/serve.ts";

const CHROMIUM = "/usr/bin/chromium";
const ASSETS = join(ROOT, "dist/explorer");
const manifest = () => JSON.parse(readFileSync(join(ASSETS, "manifest.json"), "utf8")) as { page: string; files: Record<string, string> };
const script = () => Object.keys(manifest().files).find((file) => file.endsWith(".js"))!;

/** A raw GET: the path is sent exactly as written (fetch would resolve `..` before sending). */
function get(url: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const target = new URL(url);
    const req = httpRequest({ host: target.hostname, port: target.port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

const store = createKeyStore();
let key: string;
let server: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  ({ key } = await store.create({ name: "Ada Lovelace", roles: ["VIEWER"], permissions: [] }));
  server = await serve({ store, port: 0 });
  plain = await serve({ store, port: 0, explorer: false });
});
afterAll(async () => {
  await server?.close();
  await plain?.close();
});

describe("explorer in a browser", () => {
  it("loads GraphiQL offline, runs { me { name } } with the key typed in, shows the 401 message for a wrong key", async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run the explorer test`);
    }
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const requests: string[] = [];
      const problems: string[] = [];
      page.on("request", (request) => requests.push(request.url()));
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
      });

      const loaded = await page.goto(`${server.url}/graphql`);
      expect(loaded?.status()).toBe(200);
      await page.fill("#sapi-key-input", key);
      await page.click(".graphiql-execute-button");
      const result = page.locator(".graphiql-response");
      await expect.poll(() => result.innerText(), { timeout: 15_000 }).toContain('"name": "Ada Lovelace"');
      mkdirSync(join(ROOT, "test-results"), { recursive: true });
      await page.screenshot({ path: join(ROOT, "test-results/explorer.png") });

      await page.fill("#sapi-key-input", generateSecret());
      await page.click(".graphiql-execute-button");
      await expect.poll(() => result.innerText(), { timeout: 15_000 }).toContain("Invalid or revoked API key");

      const origin = new URL(server.url).origin;
      expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
      expect(requests.some((url) => url.includes("/graphql/explorer/explorer."))).toBe(true);
      expect(requests.filter((url) => url.includes("sapi_"))).toEqual([]);
      expect(await context.cookies()).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

describe("explorer's first minute", () => {
  it("asks for a key instead of showing an error, and loads the schema as soon as a key is pasted", async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    try {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      const posts: string[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST") posts.push(request.postData() ?? "");
      });
      await page.goto(`${server.url}/graphql`);
      await expect.poll(() => page.getByRole("status").innerText(), { timeout: 15_000 }).toContain("Paste an API key");
      await page.getByRole("button", { name: "Show Documentation Explorer" }).click();
      const body = () => page.locator("body").innerText();
      expect(await body()).not.toMatch(/Missing API key|Error fetching schema/);
      expect(posts).toEqual([]); // no introspection without a key

      await page.fill("#sapi-key-input", key);
      // The Docs pane fills in by itself: no manual re-fetch.
      await expect.poll(() => page.locator(".graphiql-doc-explorer").innerText(), { timeout: 15_000 }).toMatch(/Query/);
      expect(posts.some((data) => data.includes("__schema"))).toBe(true);
      expect(await page.getByRole("status").count()).toBe(0);
      expect(await body()).not.toMatch(/Missing API key|Error fetching schema/);
    } finally {
      await browser.close();
    }
  });
});

describe("explorer assets", () => {
  it("serves the page by content negotiation: brotli or gzip as accepted, no-cache, a strict CSP", async () => {
    const html = readFileSync(join(ASSETS, "index.html"));
    const br = await get(server.url, "/graphql", { accept: "text/html,*/*;q=0.8", "accept-encoding": "gzip, deflate, br" });
    expect(br.status).toBe(200);
    expect(br.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(br.headers["content-encoding"]).toBe("br");
    expect(br.headers["cache-control"]).toBe("no-cache");
    expect(br.headers.vary).toBe("Accept, Accept-Encoding");
    expect(br.headers["content-security-policy"]).toMatch(/default-src 'none'; script-src 'self'; style-src 'self';/);
    expect(br.headers["set-cookie"]).toBeUndefined();
    expect(brotliDecompressSync(br.body)).toEqual(html);
    const gz = await get(server.url, "/graphql", { accept: "text/html", "accept-encoding": "gzip, br;q=0" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.body)).toEqual(html);
    const identity = await get(server.url, "/graphql", { accept: "text/html" });
    expect(identity.headers["content-encoding"]).toBeUndefined();
    expect(identity.body).toEqual(html);
  });

  it("serves the hashed script and style immutable, compressed", async () => {
    for (const [file, type] of Object.entries(manifest().files)) {
      if (file === manifest().page) continue;
      const response = await get(server.url, `/graphql/explorer/${file}`, { "accept-encoding": "gzip" });
      expect(response.status).toBe(200);
      expect(response.headers["content-type"]).toBe(type);
      expect(response.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(response.headers.vary).toBe("Accept-Encoding");
      // Buffer.equals: vitest's toEqual walks a megabyte byte by byte for seconds.
      expect(gunzipSync(response.body).equals(readFileSync(join(ASSETS, file)))).toBe(true);
    }
  });

  it("answers 404 to any other file, and to paths that try to leave dist/explorer/", async () => {
    for (
      const path of [
        "/graphql/explorer/nope.js",
        "/graphql/explorer/manifest.json",
        "/graphql/explorer/index.html",
        `/graphql/explorer/${script()}.br`,
        "/graphql/explorer/../../package.json",
        "/graphql/explorer/..%2f..%2fpackage.json",
        "/graphql/explorer/%2e%2e/%2e%2e/package.json",
        `/graphql/explorer/./${script()}`,
        "/graphql/explorer/",
        "/graphql/explorer/constructor",
      ]
    ) {
      const response = await get(server.url, path);
      expect([path, response.status]).toEqual([path, 404]);
      expect(JSON.parse(response.body.toString()).errors[0].extensions.code).toBe("NOT_FOUND");
    }
  });

  it("leaves GraphQL requests alone: a GET with a query, or without text/html, is GraphQL's", async () => {
    const query = await get(server.url, `/graphql?query=${encodeURIComponent("{ me { name } }")}`, {
      accept: "text/html, application/json",
      authorization: `Bearer ${key}`,
    });
    expect(JSON.parse(query.body.toString())).toEqual({ data: { me: { name: "Ada Lovelace" } } });
    const json = await get(server.url, "/graphql", { accept: "application/json" });
    expect(json.status).toBe(401);
  });

  it("explorer: false answers browsers in JSON (406: the service has no HTML to give), and serves no assets", async () => {
    const page = await get(plain.url, "/graphql", { accept: "text/html" });
    expect(page.headers["content-type"]).toMatch(/^application\/json/);
    expect(page.status).toBe(406);
    expect(JSON.parse(page.body.toString()).errors[0].extensions.code).toBe("NOT_ACCEPTABLE");
    expect((await get(plain.url, `/graphql/explorer/${script()}`)).status).toBe(404);
  });
});

describe("explorer in the CLI's service", () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it("is not loaded when the service starts, only on a browser's first request", async () => {
    const cli = await startTracedServer(tmp.dir);
    try {
      expect((await get(cli.url, "/healthz")).status).toBe(200);
      // (The worktree's own path may hold the word "explorer": look for the chunk and the assets.)
      expect(cli.loaded()).not.toMatch(/chunks\/explorer-|dist\/explorer\//);
      const page = await get(cli.url, "/graphql", { accept: "text/html" });
      expect(page.status).toBe(200);
      expect(cli.loaded()).toMatch(/dist\/lazy\/chunks\/explorer-\w+\.js/);
    } finally {
      await cli.stop();
    }
  });

  it("--no-explorer turns it off", async () => {
    const cli = await startServer({ store: join(tmp.dir, "keys"), args: ["--no-explorer"] });
    try {
      const page = await get(cli.url, "/graphql", { accept: "text/html" });
      expect(page.headers["content-type"]).toMatch(/^application\/json/);
    } finally {
      await cli.stop();
    }
  });
});

describe("explorer under Deno, from the sources", () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  /** `deno run -A cli.ts serve --port 0` in `cwd`; resolves with its URL and a stop function. */
  function denoServe(cwd: string) {
    const child = spawn(join(ROOT, "node_modules/.bin/deno"), ["run", "-A", "cli.ts", "serve", "--port", "0", "--store", "memory:"], {
      cwd,
      env: { ...process.env, LOG_LEVEL: "", NO_COLOR: "1" },
    });
    let stderr = "";
    return new Promise<{ url: string; stop(): void }>((resolve, reject) => {
      const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`deno serve did not start:\n${stderr}`))), 30_000);
      child.stderr.setEncoding("utf8").on("data", (data) => {
        stderr += data;
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) clearTimeout(timer), resolve({ url: match[1], stop: () => child.kill("SIGKILL") });
      });
    });
  }

  it("serves the built explorer when dist/ exists, else a page saying the explorer needs the built package", async () => {
    const built = await denoServe(ROOT);
    try {
      const page = await get(built.url, "/graphql", { accept: "text/html", "accept-encoding": "br" });
      expect(page.status).toBe(200);
      expect(brotliDecompressSync(page.body).equals(readFileSync(join(ASSETS, "index.html")))).toBe(true);
    } finally {
      built.stop();
    }
    const sources = join(tmp.dir, "sources");
    mkdirSync(sources);
    for (const entry of ["cli.ts", "mod.ts", "deno.json", "package.json", "lib"]) cpSync(join(ROOT, entry), join(sources, entry), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(sources, "node_modules"));
    const bare = await denoServe(sources);
    try {
      const page = await get(bare.url, "/graphql", { accept: "text/html" });
      expect(page.status).toBe(501);
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(page.body.toString()).toContain("The explorer is part of the built package");
    } finally {
      bare.stop();
    }
  });
});
