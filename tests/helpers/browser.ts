// Debian's headless Chromium through playwright-core, launched as tests/http/explorer.test.ts does; CI installs
// /usr/bin/chromium, so a missing browser fails the test rather than skipping it. Also: a page's problems
// (script errors, CSP refusals) collected, and two accessibility checks: every control in Chromium's own
// accessibility tree must have a name, and axe-core must find no serious or critical violation.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { ROOT } from "./cli.ts";

const CHROMIUM = "/usr/bin/chromium";
export const ARTEFACTS = join(ROOT, "test-results");

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)`);
  mkdirSync(ARTEFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** Script errors and CSP refusals on `page`, and every URL it requested. */
export function watch(page: Page): { problems: string[]; requests: string[] } {
  const seen = { problems: [] as string[], requests: [] as string[] };
  page.on("request", (request) => seen.requests.push(request.url()));
  page.on("pageerror", (error) => seen.problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) seen.problems.push(message.text());
  });
  return seen;
}

const CONTROLS = new Set(["button", "textbox", "searchbox", "checkbox", "combobox", "spinbutton", "radio", "link", "listbox", "slider", "switch"]);

/** The controls on the page, as Chromium exposes them to screen readers, that have no accessible name. */
export async function unnamedControls(page: Page): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = await cdp.send("Accessibility.getFullAXTree") as { nodes: { ignored?: boolean; role?: { value: string }; name?: { value: string } }[] };
    return nodes
      .filter((node) => !node.ignored && CONTROLS.has(node.role?.value ?? "") && !String(node.name?.value ?? "").trim())
      .map((node) => node.role!.value);
  } finally {
    await cdp.detach();
  }
}

/** Presses Tab until the focused control's accessible name (its label) matches, as a keyboard user would. */
export async function tabTo(page: Page, name: RegExp, limit = 80): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press("Tab");
    const label = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el) return "";
      const input = el as HTMLInputElement;
      const labels = input.labels ? [...input.labels].map((l) => l.textContent).join(" ") : "";
      return `${el.getAttribute("aria-label") ?? ""} ${labels} ${el.tagName === "BUTTON" ? el.textContent : ""}`.trim();
    });
    if (name.test(label)) return;
  }
  throw new Error(`no control matching ${name} reached with Tab`);
}

/**
 * axe-core's serious and critical violations on the page as it is now, each as "rule: target". The script
 * is evaluated through the DevTools protocol, which the page's CSP does not govern, so the page is tested
 * under the headers it really gets.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = readFileSync(join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
  await page.evaluate(source);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const { violations } = await axe.run();
    return violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(" ")}`));
  });
  return found;
}
