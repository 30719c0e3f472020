/**
 * The explorer's page and files (GraphiQL with an API-key field), built into `dist/explorer/` by
 * scripts/explorer-build.mjs: the page, no-cache and under a strict Content-Security-Policy; the hashed
 * script and style, immutable (see page-assets.ts for how they are found, encoded and kept). Loaded by
 * `explorer-route.ts` on the first browser request.
 */
import { errorResponse } from "./responses.ts";
import { type Body, findPageAssets, notBuilt } from "./page-assets.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

export { pickEncoding } from "./page-assets.ts";

/** Answers the page (`/graphql`) or a file under `assets`. */
type Explorer = (request: ServiceRequest, pathname: string) => Promise<ServiceResponse<string | Body>>;

/** The page may load only its own script and style, and talk only to its own origin. */
export const EXPLORER_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const COMMON = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
const IMMUTABLE = "public, max-age=31536000, immutable";

/** Creates the explorer, serving its files under `assets` (a path ending in `/`). */
export async function createExplorer(assets: string): Promise<Explorer> {
  const files = await findPageAssets("explorer");
  if (!files) {
    return () =>
      Promise.resolve({
        status: 501,
        headers: { ...COMMON, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-security-policy": "default-src 'none'" },
        body: notBuilt("explorer"),
      });
  }
  return (request, pathname) => {
    if (pathname === "/graphql") {
      // The same URL answers JSON to GraphQL clients: caches must key on Accept too.
      return files.send(request, files.page, {
        ...COMMON,
        "cache-control": "no-cache",
        vary: "Accept, Accept-Encoding",
        "content-security-policy": EXPLORER_CSP,
        "x-frame-options": "DENY",
      });
    }
    const file = pathname.slice(assets.length);
    if (file === files.page || !files.has(file)) {
      return Promise.resolve(errorResponse(404, "NOT_FOUND", "Not found: no such explorer file"));
    }
    return files.send(request, file, { ...COMMON, "cache-control": IMMUTABLE, vary: "Accept-Encoding" });
  };
}
