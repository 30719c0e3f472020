// The web console at GET /console, in Debian's headless Chromium: sign in with a pasted key, the keys
// table, create (the secret once), update, delete, the audit trail, the keyboard alone, names that look
// like HTML, two screen widths; and the headers that keep the page from running foreign script or being framed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { request as httpRequest } from "node:http";
import { gzipSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, tempDir } from "../helpers/cli.ts";
import { startServer, startTracedServer } from "../helpers/server.ts";
import { ARTEFACTS, axeViolations, launch, tabTo, unnamedControls, watch } from "../helpers/browser.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { serve, type RunningServer } from "../../lib/http/serve.ts";

/** A raw GET (or HEAD), headers as sent. */
function get(url: string, path: string, method = "GET") {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const target = new URL(url);
    const req = httpRequest({ host: target.hostname, port: target.port, path, method }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function graphql(url: string, key: string, query: string) {
  const response = await fetch(`${url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, body: await response.json() };
}

const XSS = "<img src=x onerror=window.__pwned=1>";
const store = createKeyStore();
let admin: string;
let viewer: string;
let server: RunningServer;
let browser: Browser;
// Keys made in one millisecond page by id; a tick between creates keeps the order the tests read fixed.
const tick = () => new Promise((done) => setTimeout(done, 2));
beforeAll(async () => {
  ({ key: admin } = await store.create({ name: "ops admin", roles: ["ADMIN"], permissions: [] }));
  await tick();
  ({ key: viewer } = await store.create({ name: "dashboard", roles: ["VIEWER"], permissions: [] }));
  await tick();
  // Names hold only letters, numbers and spaces; descriptions are printable text, markup included.
  await store.create({ name: "markup", description: `${XSS} <script>window.__pwned=2</script>`, roles: ["GUEST"], permissions: [] });
  server = await serve({ store, port: 0, recordLastUse: false });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function signIn(page: Page, key = admin) {
  await page.goto(`${server.url}/console`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("console in a browser", () => {
  it("signs in, creates a key whose secret is shown once and works, updates it, deletes it, and shows the audit trail", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const seen = watch(page);
    await signIn(page);
    const table = page.getByRole("table", { name: "API keys" });
    await expect.poll(() => table.innerText()).toContain("dashboard");
    expect(await page.getByRole("banner").innerText()).toContain("Signed in as ops admin");

    await page.getByRole("button", { name: "New key" }).click();
    // Presets are offered only when the schema has apiKeyPresets.
    const schema = await graphql(server.url, admin, '{ __type(name: "Query") { fields { name } } }');
    const presets = schema.body.data.__type.fields.some((field: { name: string }) => field.name === "apiKeyPresets");
    expect(await page.getByLabel("Preset").count()).toBe(presets ? 1 : 0);
    await page.getByLabel("Name", { exact: true }).fill("ci deploy");
    await page.getByLabel("Description").fill("deploys from CI");
    await page.getByLabel(/^VIEWER/).check();
    await page.getByLabel("Resource").selectOption("DOCKER");
    await page.getByLabel("UPDATE_ANY").check();
    await page.getByLabel("Expires on").fill("2031-05-01");
    await page.getByRole("button", { name: "Create key" }).click();
    const secretField = page.getByLabel("New API key");
    await expect.poll(() => secretField.inputValue()).toMatch(/^sapi_/);
    const secret = await secretField.inputValue();
    expect(await page.getByRole("alert").first().innerText()).toMatch(/will not be shown again/);
    await page.screenshot({ path: join(ARTEFACTS, "console-1280-secret.png"), fullPage: true });
    // The secret works against the service, and the page kept it nowhere but on screen.
    const me = await graphql(server.url, secret, "{ me { name roles permissions { resource actions } } }");
    expect(me.body.data.me).toEqual({ name: "ci deploy", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }] });
    const kept = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + document.cookie);
    expect(kept).not.toContain(secret);
    expect(await context.cookies()).toEqual([]);
    await page.getByRole("button", { name: /Done/ }).click();
    expect(await page.getByLabel("New API key").count()).toBe(0);
    expect(await page.locator("body").innerText()).not.toContain(secret);
    const row = page.getByRole("row", { name: /ci deploy/ });
    await expect.poll(() => row.innerText()).toMatch(/VIEWER · DOCKER: UPDATE_ANY/);
    expect(await row.innerText()).toMatch(/2031/);
    expect(await row.innerText()).toMatch(/active/);

    await row.getByRole("button", { name: /Edit/ }).click();
    await page.getByLabel("Name", { exact: true }).fill("ci deploy 2");
    await page.getByLabel("Description").fill("deploys and reads");
    await page.getByLabel(/^GUEST/).check();
    await page.getByRole("button", { name: "Save changes" }).click();
    await expect.poll(() => page.getByRole("status").allInnerTexts()).toContain("Saved ci deploy 2.");
    const updated = (await store.list()).find((key) => key.name === "ci deploy 2");
    expect(updated).toMatchObject({ description: "deploys and reads", roles: ["VIEWER", "GUEST"] });

    await page.getByRole("row", { name: /ci deploy 2/ }).getByRole("button", { name: /Delete/ }).click();
    const dialog = page.getByRole("dialog");
    const confirm = dialog.getByRole("button", { name: "Delete" });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(/to confirm/).fill("ci deploy");
    expect(await confirm.isDisabled()).toBe(true); // not the whole name
    await dialog.getByLabel(/to confirm/).fill("ci deploy 2");
    await confirm.click();
    await expect.poll(() => page.getByRole("status").allInnerTexts()).toContain("Deleted ci deploy 2.");
    expect((await store.list()).map((key) => key.name)).not.toContain("ci deploy 2");
    expect((await graphql(server.url, secret, "{ me { name } }")).status).toBe(401);

    await page.getByRole("button", { name: "Audit trail" }).click();
    const audit = page.getByRole("table", { name: "Audit events" });
    await expect.poll(() => audit.innerText()).toMatch(/delete\s+ci deploy 2\s+key ops admin/);
    expect(await audit.innerText()).toMatch(/update\s+ci deploy 2\s+key ops admin\s+name, description, roles/);
    expect(await audit.innerText()).toMatch(/create\s+ci deploy\s+key ops admin/);
    // Oldest first, as `--audit` prints it, and every time with its zone, as the CLI writes it.
    const rows = await audit.locator("tbody tr").allInnerTexts();
    expect(rows.findIndex((row) => /\bcreate\s+ci deploy\b/.test(row))).toBeLessThan(rows.findIndex((row) => /\bdelete\s+ci deploy 2\b/.test(row)));
    for (const time of await audit.locator("tbody time").allInnerTexts()) expect(time).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    await page.getByLabel("Show changes from").selectOption("1h");
    await expect.poll(() => audit.innerText()).toMatch(/delete\s+ci deploy 2/);
    await page.screenshot({ path: join(ARTEFACTS, "console-1280-audit.png"), fullPage: true });

    const origin = new URL(server.url).origin;
    expect(seen.requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
    expect(seen.requests.filter((url) => url.includes("sapi_"))).toEqual([]);
    expect(seen.problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("creates a key with an IP allow-list, shows it in the key's row, and removes it on edit", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const seen = watch(page);
    await signIn(page);
    await page.getByRole("button", { name: "New key" }).click();
    await page.getByLabel("Name", { exact: true }).fill("office only");
    await page.getByLabel(/^GUEST/).check();
    await page.getByLabel("Allowed addresses").fill("10.1.2.3/8, 2001:DB8::1");
    await page.getByRole("button", { name: "Create key" }).click();
    const secretField = page.getByLabel("New API key");
    await expect.poll(() => secretField.inputValue()).toMatch(/^sapi_/);
    const secret = await secretField.inputValue();
    expect((await graphql(server.url, secret, "{ me { name } }")).status).toBe(403); // the test runs from 127.0.0.1
    await page.getByRole("button", { name: /Done/ }).click();
    const row = page.getByRole("row", { name: /office only/ });
    await expect.poll(() => row.innerText()).toContain("only from 10.0.0.0/8, 2001:db8::1/128");

    await row.getByRole("button", { name: /Edit/ }).click();
    expect(await page.getByLabel("Allowed addresses").inputValue()).toBe("10.0.0.0/8, 2001:db8::1/128");
    await page.getByLabel("Allowed addresses").fill("");
    await page.getByRole("button", { name: "Save changes" }).click();
    await expect.poll(() => page.getByRole("status").allInnerTexts()).toContain("Saved office only.");
    expect((await store.list()).find((key) => key.name === "office only")?.allowFrom).toBeUndefined();
    expect((await graphql(server.url, secret, "{ me { name } }")).status).toBe(200);
    expect(await page.getByRole("row", { name: /office only/ }).innerText()).not.toContain("only from");
    expect(seen.problems).toEqual([]);
    await context.close();
    await store.deleteByName("office only"); // the tests below read the store's keys
  }, 60_000);

  it("lists keys oldest first, sorts the rows by a column both ways and narrows them by the service's filter", async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await signIn(page);
    const table = page.getByRole("table", { name: "API keys" });
    const names = () => table.locator("tbody .name").allInnerTexts();
    await expect.poll(names).toEqual(["ops admin", "dashboard", "markup"]);
    const header = page.getByRole("columnheader", { name: /Name/ });
    expect(await header.getAttribute("aria-sort")).toBe("none");
    await header.getByRole("button").click();
    expect(await names()).toEqual(["dashboard", "markup", "ops admin"]);
    expect(await header.getAttribute("aria-sort")).toBe("ascending");
    await header.getByRole("button").click();
    expect(await names()).toEqual(["ops admin", "markup", "dashboard"]);
    expect(await header.getAttribute("aria-sort")).toBe("descending");
    await page.getByRole("columnheader", { name: /Roles and permissions/ }).getByRole("button").click();
    expect(await names()).toEqual(["ops admin", "markup", "dashboard"]); // ADMIN, GUEST, VIEWER
    await page.getByLabel("Filter keys").fill("role:viewer");
    await expect.poll(names).toEqual(["dashboard"]);
    expect(await page.getByText("1 matching key shown").count()).toBe(1);
    await page.getByLabel("Filter keys").fill("nothing matches this");
    await expect.poll(names).toEqual([]);
    await page.close();
  });

  it("creates a key from a preset: the picker fills in the preset's exact grants", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
    await signIn(page);
    await page.getByRole("button", { name: "New key" }).click();
    await page.getByLabel("Preset").selectOption({ label: "docker_manager" });
    await page.getByLabel("Name", { exact: true }).fill("containers");
    await page.getByRole("button", { name: "Create key" }).click();
    const secretField = page.getByLabel("New API key");
    await expect.poll(() => secretField.inputValue()).toMatch(/^sapi_/);
    const made = await store.verify(await secretField.inputValue());
    const preset = (await graphql(server.url, admin, "{ apiKeyPresets { name permissions { resource actions } } }"))
      .body.data.apiKeyPresets.find((p: { name: string }) => p.name === "docker_manager");
    expect(made?.permissions).toEqual(preset.permissions);
    await store.deleteById(made!.id);
    await page.close();
  });

  it("shows a disabled key as disabled, and a template link that opens the create form with its grants", async () => {
    const made = await store.create({ name: "paused dashboard", roles: ["VIEWER"], permissions: [{ resource: "DOCKER", actions: ["UPDATE_ANY"] }] });
    await store.update(made.id, { disabled: true } as never);
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await signIn(page);
    const row = page.getByRole("row", { name: /paused dashboard/ });
    await expect.poll(() => row.innerText()).toMatch(/\bdisabled\b/);
    await row.getByRole("button", { name: "Template link paused dashboard" }).click();
    const href = await page.locator("a.template-link").getAttribute("href");
    expect(href).not.toContain("sapi_");
    const link = new URL(href!);
    expect([link.pathname, link.searchParams.get("name"), link.searchParams.get("scopes"), link.searchParams.has("redirect_uri")])
      .toEqual(["/authorize", "paused dashboard", "role:viewer,docker:update_any", false]);
    await page.goto(href!);
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText()).toBe("Create a key from a template");
    await expect.poll(() => page.getByLabel("Key name").inputValue()).toBe("paused dashboard");
    await store.deleteById(made.id);
    await page.close();
  });

  it("shows a replaced key still in its grace period as grace, until when, beside its successor", async () => {
    await store.create({ name: "rolled", roles: ["GUEST"], permissions: [] });
    await store.create({ name: "rolled", roles: ["GUEST"], permissions: [] }, { overwrite: true, graceMs: 3_600_000 });
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await signIn(page);
    const rows = page.getByRole("row", { name: /rolled/ });
    await expect.poll(() => rows.count()).toBe(2);
    const texts = (await rows.allInnerTexts()).join("\n");
    expect(texts).toMatch(/grace until .*\bgrace\b/s);
    expect(texts).toMatch(/never\s+never\s+active/);
    await page.getByLabel("Filter keys").fill("state:grace");
    await expect.poll(() => rows.count()).toBe(1);
    for (const key of await store.list()) if (key.name === "rolled") await store.deleteById(key.id);
    await page.close();
  });

  it("tells a key without API_KEY:READ_ANY what it lacks, and does not keep it", async () => {
    const page = await browser.newPage();
    await signIn(page, viewer);
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/The key dashboard lacks the permission API_KEY:READ_ANY/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.getByLabel("API key").fill("sapi_not-a-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/Malformed API key/);
    await page.close();
  });

  it("creates a key with the keyboard alone", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${server.url}/console`);
    await page.keyboard.type(admin); // the key field has focus on arrival
    await page.keyboard.press("Enter");
    await page.getByRole("table", { name: "API keys" }).waitFor();
    await tabTo(page, /^New key$/);
    await page.keyboard.press("Enter");
    await tabTo(page, /^Name/);
    await page.keyboard.type("typed only");
    await tabTo(page, /^VIEWER/);
    await page.keyboard.press("Space");
    await tabTo(page, /^Resource/);
    await page.keyboard.type("INFO"); // a select picks by typing
    await tabTo(page, /^READ_ANY$/);
    await page.keyboard.press("Space");
    await tabTo(page, /^Create key$/);
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByLabel("New API key").inputValue()).toMatch(/^sapi_/);
    expect((await store.list()).find((key) => key.name === "typed only")).toMatchObject({
      roles: ["VIEWER"],
      permissions: [{ resource: "INFO", actions: ["READ_ANY"] }],
    });
    // The confirm dialog takes focus, and Escape closes it without deleting.
    await tabTo(page, /Done/);
    await page.keyboard.press("Enter");
    await page.getByRole("row", { name: /typed only/ }).getByRole("button", { name: /Delete/ }).focus();
    await page.keyboard.press("Enter");
    await page.keyboard.type("typed only");
    await page.keyboard.press("Escape");
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect((await store.list()).some((key) => key.name === "typed only")).toBe(true);
    await page.close();
  });

  it("shows descriptions that look like HTML as text, and runs none of it", async () => {
    const page = await browser.newPage();
    const seen = watch(page);
    await signIn(page);
    const row = page.getByRole("row", { name: /markup/ });
    await expect.poll(() => row.innerText()).toContain(XSS);
    expect(await row.innerText()).toContain("<script>window.__pwned=2</script>");
    expect(await page.locator("table img, table script").count()).toBe(0);
    expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(seen.requests.filter((url) => url.endsWith("/x"))).toEqual([]);
    await page.close();
  });

  it("names every control for screen readers and fits 375 and 1280 px wide", async () => {
    for (const width of [375, 1280]) {
      const page = await browser.newPage({ viewport: { width, height: 800 } });
      await page.goto(`${server.url}/console`);
      expect(await unnamedControls(page)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      await page.getByLabel("API key").fill(admin);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("table", { name: "API keys" }).waitFor();
      expect(await unnamedControls(page)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      // Nothing wider than the screen: no sideways scrolling of the whole page.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(ARTEFACTS, `console-${width}-keys.png`), fullPage: true });
      await page.getByRole("button", { name: "New key" }).click();
      expect(await unnamedControls(page)).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(ARTEFACTS, `console-${width}-create.png`), fullPage: true });
      expect(await axeViolations(page)).toEqual([]);
      await page.getByRole("button", { name: "Audit trail" }).click();
      await page.getByRole("table", { name: "Audit events" }).waitFor();
      expect(await unnamedControls(page)).toEqual([]);
      await page.close();
    }
  });

  it("offers Rotate as the service's schema allows: a new secret once, or a message that it cannot", async () => {
    const { body } = await graphql(server.url, admin, '{ __type(name: "ApiKeyMutations") { fields { name } } }');
    const rotates = body.data.__type.fields.some((field: { name: string }) => field.name === "rotate");
    const page = await browser.newPage();
    await signIn(page);
    await page.getByRole("row", { name: /dashboard/ }).getByRole("button", { name: /Rotate/ }).click();
    const dialog = page.getByRole("dialog");
    if (rotates) {
      await dialog.getByRole("button", { name: "Rotate key" }).click();
      const secret = await page.getByLabel("New API key").inputValue();
      expect((await graphql(server.url, secret, "{ me { name } }")).body.data.me.name).toBe("dashboard");
      viewer = secret;
    } else {
      expect(await dialog.innerText()).toMatch(/does not offer rotation/);
      await dialog.getByRole("button", { name: "Close" }).click();
      expect(await page.getByRole("dialog").count()).toBe(0);
    }
    await page.close();
  });
});

describe("console headers", () => {
  it("sends the page under a strict CSP that forbids framing, with nosniff and no-referrer, and no cookie", async () => {
    for (const path of ["/console", "/authorize?name=x"]) {
      const page = await get(server.url, path);
      expect(page.status).toBe(200);
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
      const csp = String(page.headers["content-security-policy"]);
      for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"]) {
        expect(csp).toContain(directive);
      }
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(page.headers["x-content-type-options"]).toBe("nosniff");
      expect(page.headers["referrer-policy"]).toBe("no-referrer");
      expect(page.headers["x-frame-options"]).toBe("DENY");
      expect(page.headers["set-cookie"]).toBeUndefined();
      expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)/); // no inline script
      expect(page.body).not.toMatch(/\sstyle=|<style/);
    }
    const script = /src="console\/([^"]+)"/.exec((await get(server.url, "/console")).body)![1];
    const asset = await get(server.url, `/console/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(asset.headers["x-content-type-options"]).toBe("nosniff");
    for (const path of ["/console/manifest.json", "/console/../package.json", "/console/index.html", "/console/nope.js"]) {
      expect([path, (await get(server.url, path)).status]).toEqual([path, 404]);
    }
  });

  it("sends at most 60 kB of gzipped JavaScript", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "dist/console/manifest.json"), "utf8")) as { files: Record<string, string> };
    const scripts = Object.keys(manifest.files).filter((file) => file.endsWith(".js"));
    expect(scripts).toHaveLength(1);
    const raw = readFileSync(join(ROOT, "dist/console", scripts[0]));
    expect(gzipSync(raw, { level: 9 }).length).toBeLessThanOrEqual(60 * 1024);
    expect(readFileSync(join(ROOT, "dist/console", `${scripts[0]}.gz`)).length).toBeLessThanOrEqual(60 * 1024);
  });

  it("is not loaded when the service starts, only on a browser's first request", async () => {
    const tmp = tempDir();
    const cli = await startTracedServer(tmp.dir);
    try {
      expect((await get(cli.url, "/healthz")).status).toBe(200);
      expect(cli.loaded()).not.toMatch(/chunks\/console-assets-/);
      expect((await get(cli.url, "/console")).status).toBe(200);
      expect(cli.loaded()).toMatch(/dist\/lazy\/chunks\/console-assets-\w+\.js/);
    } finally {
      await cli.stop();
      tmp.cleanup();
    }
  });

  it("--no-console answers 404 at /console and /authorize", async () => {
    const tmp = tempDir();
    const cli = await startServer({ store: join(tmp.dir, "keys"), args: ["--no-console"] });
    try {
      for (const path of ["/console", "/authorize"]) expect((await get(cli.url, path)).status).toBe(404);
    } finally {
      await cli.stop();
      tmp.cleanup();
    }
    const on = await startServer({ store: join(tmp.dir, "keys2") });
    try {
      expect((await get(on.url, "/console")).status).toBe(200);
    } finally {
      await on.stop();
      tmp.cleanup();
    }
  });
});
