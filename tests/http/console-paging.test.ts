// The console's keys table on 120 keys, in Debian's headless Chromium: it shows the first 50 (one page of
// `apiKeys(first: 50)`), **Load more keys** adds the next pages until there are no more, and the filter box
// asks the service (`apiKeys(filter:)`), so it finds a key that was never loaded, and says what is wrong
// with a mistyped filter. Named for screen readers and axe-clean with the button showing.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { axeViolations, launch, unnamedControls, watch } from "../helpers/browser.ts";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { serve, type RunningServer } from "../../lib/http/serve.ts";
import { pageKeys } from "../../lib/store/paging.ts";

const store = createKeyStore();
let admin: string;
let server: RunningServer;
let browser: Browser;
beforeAll(async () => {
  ({ key: admin } = await store.create({ name: "ops admin", roles: ["ADMIN"], permissions: [] }));
  for (let i = 0; i < 120; i++) await store.create({ name: `bulk ${String(i).padStart(3, "0")}`, roles: ["VIEWER"], permissions: [] });
  server = await serve({ store, port: 0, recordLastUse: false });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function signIn(page: Page) {
  await page.goto(`${server.url}/console`);
  await page.getByLabel("API key").fill(admin);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("the console's keys table on 120 keys", () => {
  it("shows 50, loads the next pages on request, and filters on the service", async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    const seen = watch(page);
    await signIn(page);
    const rows = page.getByRole("table", { name: "API keys" }).locator("tbody tr");
    const more = page.getByRole("button", { name: "Load more keys" });
    await expect.poll(() => rows.count()).toBe(50);
    expect(await page.getByText("50 keys shown, more to load").count()).toBe(1);
    expect(await unnamedControls(page)).toEqual([]);
    expect(await axeViolations(page)).toEqual([]);
    // In the service's order (oldest first; keys made in one millisecond by id), a page after the other.
    const names = () => page.getByRole("table", { name: "API keys" }).locator("tbody .name").allInnerTexts();
    const order = (await pageKeys(store, { first: 1000 }, Date.now())).map((k) => k.name);
    expect(await names()).toEqual(order.slice(0, 50));
    await more.click();
    await expect.poll(() => rows.count()).toBe(100);
    expect(await names()).toEqual(order.slice(0, 100));
    await more.click();
    await expect.poll(() => rows.count()).toBe(121);
    expect(await more.isVisible()).toBe(false);
    expect(await names()).toEqual(order);
    expect(await page.getByText("121 keys shown").count()).toBe(1);

    // The filter goes to the service: after a reload of the page only the first 50 are loaded, and it still finds bulk 117.
    await page.reload();
    await expect.poll(() => rows.count()).toBe(50);
    await page.getByLabel("Filter keys").fill("bulk 117");
    await expect.poll(names).toEqual(["bulk 117"]);
    expect(await more.isVisible()).toBe(false);
    await page.getByLabel("Filter keys").fill("role:admn");
    await expect.poll(() => page.getByRole("alert").innerText()).toMatch(/Unknown role 'admn'.*ADMIN/);
    await page.getByLabel("Filter keys").fill("");
    await expect.poll(() => rows.count()).toBe(50);
    expect(seen.problems).toEqual([]);
    await page.close();
  }, 60_000);
});
