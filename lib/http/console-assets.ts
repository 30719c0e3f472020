/**
 * The web console's files, built into `dist/console/` by scripts/console-build.mjs: the page (for
 * `/console` and `/authorize`), no-cache, under a strict Content-Security-Policy that also forbids
 * framing (the consent page must not be clickjacked); the hashed script and style, immutable; each
 * precompressed (br, gzip) and chosen by Accept-Encoding. Only the files the manifest names are served.
 */
import { errorResponse } from "./responses.ts";
import { type Body, findPageAssets, notBuilt } from "./page-assets.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

/**
 * Only the page's own script, style and `POST /graphql`; no inline script, no plugins, no `<base>`, forms
 * post only to this origin, and no page may frame this one.
 */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/** Sent with every console response, the 404s included. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};
const IMMUTABLE = "public, max-age=31536000, immutable";

const PAGE_HEADERS = {
  ...CONSOLE_HEADERS,
  "cache-control": "no-cache",
  "content-security-policy": CONSOLE_CSP,
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
};

/**
 * Creates the console, answering the page at each of `pages` and its files under `assets` (a path ending in
 * `/`): reads the manifest now and each file on its first request, then keeps it in memory.
 */
export async function createConsole(assets: string, pages: readonly string[]): Promise<(request: ServiceRequest, pathname: string) => Promise<ServiceResponse<string | Body>>> {
  const files = await findPageAssets("console");
  if (!files) {
    return () => Promise.resolve({ status: 501, headers: { ...PAGE_HEADERS, "content-type": "text/html; charset=utf-8" }, body: notBuilt("console") });
  }
  return (request, pathname) => {
    if (pages.includes(pathname)) return files.send(request, files.page, { ...PAGE_HEADERS, vary: "Accept-Encoding" });
    const file = pathname.slice(assets.length);
    if (file === files.page || !files.has(file)) {
      const missing = errorResponse(404, "NOT_FOUND", "Not found: no such console file");
      return Promise.resolve({ ...missing, headers: { ...missing.headers, ...CONSOLE_HEADERS } });
    }
    return files.send(request, file, { ...CONSOLE_HEADERS, "cache-control": IMMUTABLE, vary: "Accept-Encoding" });
  };
}
