// The consent page apps send people to (GET /authorize, Unraid's parameters and scope grammar), end to end in
// Debian's headless Chromium against a callback server on loopback: authorize, deny, a refused redirect_uri,
// an unknown scope, a key that may not grant what is asked.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ARTEFACTS, axeViolations, launch, unnamedControls, watch } from "../helpers/browser.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { serve, type RunningServer } from "../../lib/http/serve.ts";

const store = createKeyStore();
let admin: string;
let viewer: string;
let server: RunningServer;
let browser: Browser;
let callback: Server;
let callbackUrl: string;
/** Every request the callback server received, as full URLs. */
let arrived: URL[] = [];

beforeAll(async () => {
  ({ key: admin } = await store.create({ name: "owner", roles: ["ADMIN"], permissions: [] }));
  ({ key: viewer } = await store.create({
    name: "key maker",
    roles: ["VIEWER"],
    permissions: [{ resource: "API_KEY", actions: ["CREATE_ANY"] }],
  }));
  server = await serve({ store, port: 0, recordLastUse: false });
  callback = createServer((req, res) => {
    const url = new URL(req.url!, callbackUrl);
    if (url.pathname === "/cb") arrived.push(url); // not the browser's /favicon.ico
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>app</title><p>thanks");
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}`;
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => callback?.close(resolve));
});
beforeEach(() => {
  arrived = [];
});

const STATE = "xyz 1&2=3/é";
function authorizeUrl(params: Record<string, string>): string {
  return `${server.url}/authorize?${new URLSearchParams(params)}`;
}
const request = (overrides: Record<string, string> = {}) =>
  authorizeUrl({
    name: "Media Sync",
    description: "Syncs <b>media</b> to the cloud",
    scopes: "role:viewer,docker+vms:read_any+update_any",
    redirect_uri: `${callbackUrl}/cb?from=app`,
    state: STATE,
    ...overrides,
  });

async function signIn(page: Page, key: string) {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function newPage(width = 1280) {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  page.setDefaultTimeout(10_000);
  return page;
}

describe("create from template (no redirect_uri)", () => {
  it("fills the create form with the template's grants and shows the new secret once, sending it nowhere", async () => {
    const page = await newPage();
    const seen = watch(page);
    await page.goto(authorizeUrl({ name: "Dashboard copy", description: "from a template", scopes: "role:viewer,docker:read_any+update_any" }));
    await expect.poll(() => page.getByRole("heading", { level: 1 }).innerText()).toBe("Create a key from a template");
    await signIn(page, admin);
    expect(await page.getByLabel("Key name").inputValue()).toBe("Dashboard copy");
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByLabel("New API key").inputValue();
    expect(secret).toMatch(/^sapi_/);
    const made = await store.verify(secret);
    expect(made).toMatchObject({ name: "Dashboard copy", description: "from a template", roles: ["VIEWER"] });
    expect(made!.permissions).toEqual([{ resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] }]);
    expect(arrived).toEqual([]);
    expect(seen.requests.filter((url) => new URL(url).origin !== new URL(server.url).origin)).toEqual([]);
    expect(seen.problems).toEqual([]);
    await page.close();
  });
});

describe("authorize in a browser", () => {
  it("shows the app and the exact permissions, creates the key on Authorize and sends it with state to redirect_uri", async () => {
    const page = await newPage();
    const seen = watch(page);
    const before = (await store.list()).length;
    await page.goto(request());
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Authorize Media Sync");
    expect(await page.locator("body").innerText()).toContain("Syncs <b>media</b> to the cloud");
    expect(await page.locator("b").count()).toBe(0);
    const grants = await page.getByRole("region", { name: "Permissions requested" }).innerText();
    expect(grants).toContain("Roles: VIEWER");
    expect(grants).toContain("DOCKER: READ_ANY, READ_OWN, UPDATE_ANY, UPDATE_OWN");
    expect(grants).toContain("VMS: READ_ANY, READ_OWN, UPDATE_ANY, UPDATE_OWN");
    expect(grants).toContain("INFO: READ_ANY, READ_OWN"); // from the viewer role
    expect((await store.list()).length).toBe(before); // the GET created nothing

    await signIn(page, admin);
    const name = page.getByLabel("Key name");
    expect(await name.inputValue()).toBe("Media Sync");
    expect(await unnamedControls(page)).toEqual([]);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(ARTEFACTS, "authorize-1280.png"), fullPage: true });
    await page.getByRole("button", { name: "Authorize" }).click();
    await page.waitForURL((url) => url.pathname === "/cb");

    expect(arrived).toHaveLength(1);
    const back = arrived[0];
    expect(back.searchParams.get("state")).toBe(STATE);
    expect(back.searchParams.get("from")).toBe("app");
    const secret = back.searchParams.get("api_key")!;
    expect(secret).toMatch(/^sapi_/);
    const response = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
      body: JSON.stringify({ query: "{ me { name roles permissions { resource actions } } }" }),
    });
    expect((await store.list()).find((key) => key.name === "Media Sync")?.description).toBe("Syncs <b>media</b> to the cloud");
    expect((await response.json()).data.me).toEqual({
      name: "Media Sync",
      roles: ["VIEWER"],
      permissions: [{ resource: "DOCKER", actions: ["READ_ANY", "UPDATE_ANY"] }, { resource: "VMS", actions: ["READ_ANY", "UPDATE_ANY"] }],
    });
    expect(seen.problems).toEqual([]);
    await page.close();
  });

  it("Deny sends error=access_denied with state, and creates nothing", async () => {
    const page = await newPage(375);
    const before = (await store.list()).length;
    await page.goto(request({ name: "Denied App" }));
    await page.screenshot({ path: join(ARTEFACTS, "authorize-375.png"), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.getByRole("button", { name: "Deny" }).click();
    await page.waitForURL((url) => url.pathname === "/cb");
    expect(arrived).toHaveLength(1);
    expect(arrived[0].searchParams.get("error")).toBe("access_denied");
    expect(arrived[0].searchParams.get("state")).toBe(STATE);
    expect(arrived[0].searchParams.has("api_key")).toBe(false);
    expect((await store.list()).length).toBe(before);
    await page.close();
  });

  it("refuses a redirect_uri that is not https: or http: to this machine, and sends the browser nowhere", async () => {
    for (
      const uri of [
        "javascript:alert(document.domain)",
        "http://example.com/cb",
        `http://user:pw@127.0.0.1:${new URL(callbackUrl).port}/cb`,
        `${callbackUrl}/cb#fragment`,
      ]
    ) {
      const page = await newPage();
      const seen = watch(page);
      await page.goto(request({ redirect_uri: uri }));
      expect(await page.getByRole("alert").innerText()).toMatch(/redirect_uri/);
      expect(await page.getByRole("button").count()).toBe(0); // no Authorize, no Deny
      expect(await page.getByLabel("API key").count()).toBe(0);
      await page.waitForTimeout(200);
      expect(new URL(page.url()).pathname).toBe("/authorize");
      expect(seen.requests.filter((url) => !url.startsWith(server.url))).toEqual([]);
      await page.close();
    }
    expect(arrived).toEqual([]);
  });

  it("shows an unknown scope as an error and offers only Deny", async () => {
    const page = await newPage();
    await page.goto(request({ scopes: "docker:read_any,frobnicate:read_any" }));
    expect(await page.getByRole("alert").first().innerText()).toContain('Unknown scope "frobnicate:read_any"');
    expect(await page.getByRole("button", { name: "Authorize" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Deny" }).count()).toBe(1);
    await page.close();
  });

  it("tells a signed-in key that may not grant the permissions what it lacks, and does not offer Authorize", async () => {
    const page = await newPage();
    await page.goto(request({ scopes: "docker:update_any" }));
    await signIn(page, viewer);
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/lacks DOCKER:UPDATE_ANY/);
    expect(await page.getByRole("button", { name: "Authorize" }).isDisabled()).toBe(true);
    await page.close();
  });

  it("a key signed in here that lacks API_KEY:READ_ANY is told so at /console in the same tab, and not kept", async () => {
    const { key: guest } = await store.create({ name: "visitor", roles: ["GUEST"], permissions: [] });
    const page = await newPage();
    await page.goto(request({ scopes: "docker:read_any" }));
    await signIn(page, guest);
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/lacks API_KEY:CREATE_ANY/);
    // The same tab, so the same sessionStorage: the console checks the key it finds as it checks one pasted.
    await page.goto(`${server.url}/console`);
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/The key visitor lacks the permission API_KEY:READ_ANY/);
    expect(await page.getByLabel("API key").isVisible()).toBe(true);
    expect(await page.getByText("Signed in as").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // Reloaded, it stays signed out.
    await page.reload();
    await expect.poll(() => page.getByLabel("API key").isVisible()).toBe(true);
    expect(await page.getByText("Signed in as").count()).toBe(0);
    await page.close();
  });

  it("cannot be framed by another page", async () => {
    const framer = createServer((_, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end(`<iframe src="${request()}"></iframe>`);
    });
    await new Promise<void>((resolve) => framer.listen(0, "127.0.0.1", resolve));
    const page = await newPage();
    try {
      await page.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
      await page.waitForTimeout(500);
      // Chromium replaces a frame that frame-ancestors forbids with its own error page.
      const frame = page.frames().find((f) => f !== page.mainFrame())!;
      expect(frame.url()).toMatch(/^chrome-error:/);
    } finally {
      await page.close();
      await new Promise((resolve) => framer.close(resolve));
    }
  });
});
