/**
 * The web console's files, built into `dist/console/` by scripts/console-build.mjs: the page (for
 * `/console` and `/authorize`), no-cache, under a strict Content-Security-Policy that also forbids
 * framing (the consent page must not be clickjacked); the hashed script and style, immutable; each
 * precompressed (br, gzip) and chosen by Accept-Encoding. Only the files the manifest names are served.
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pickEncoding } from "./explorer.ts";
import { errorResponse } from "./responses.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

type Body = Uint8Array<ArrayBuffer>;
interface Asset {
  type: string;
  identity: Body;
  gzip: Body;
  br: Body;
}
interface Manifest {
  page: string;
  files: Record<string, string>;
}

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

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>service-api console</title>
<p>The console is part of the built package (<code>npm install service-api</code>, or <code>npm run build</code>
in a clone); this copy has no <code>dist/console/</code>, as when running from the sources under Deno.
The GraphQL endpoint works: <code>POST /graphql</code> with <code>Authorization: Bearer &lt;API key&gt;</code>.</p>
`;

/** The built assets: `console/` beside this module's folder or up to three above it (sources, tsc output, bundles). */
async function findAssets(): Promise<{ dir: string; manifest: Manifest } | null> {
  if (!import.meta.url.startsWith("file:")) return null;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up++, dir = dirname(dir)) {
    for (const candidate of [join(dir, "console"), join(dir, "dist", "console")]) {
      const text = await readFile(join(candidate, "manifest.json"), "utf8").catch(() => null);
      if (text !== null) return { dir: candidate, manifest: JSON.parse(text) as Manifest };
    }
  }
  return null;
}

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
  const found = await findAssets();
  if (!found) {
    return () => Promise.resolve({ status: 501, headers: { ...PAGE_HEADERS, "content-type": "text/html; charset=utf-8" }, body: NOT_BUILT });
  }
  const { dir, manifest } = found;
  const types = new Map(Object.entries(manifest.files));
  const cache = new Map<string, Promise<Asset>>();
  const load = (file: string): Promise<Asset> => {
    let asset = cache.get(file);
    if (!asset) {
      const path = join(dir, file);
      asset = Promise.all([readFile(path), readFile(`${path}.gz`), readFile(`${path}.br`)])
        .then(([identity, gzip, br]) => ({ type: types.get(file)!, identity, gzip, br }));
      asset.catch(() => cache.delete(file));
      cache.set(file, asset);
    }
    return asset;
  };
  const send = async (request: ServiceRequest, file: string, headers: Record<string, string>): Promise<ServiceResponse<Body>> => {
    const asset = await load(file);
    const encoding = pickEncoding(request.headers.get("accept-encoding"));
    const encoded: Record<string, string> = encoding === "identity" ? {} : { "content-encoding": encoding };
    const body = request.method === "HEAD" ? null : asset[encoding];
    return { status: 200, headers: { ...headers, "content-type": asset.type, ...encoded }, body };
  };
  return (request, pathname) => {
    if (pages.includes(pathname)) return send(request, manifest.page, { ...PAGE_HEADERS, vary: "Accept-Encoding" });
    const file = pathname.slice(assets.length);
    if (file === manifest.page || !types.has(file)) {
      const missing = errorResponse(404, "NOT_FOUND", "Not found: no such console file");
      return Promise.resolve({ ...missing, headers: { ...missing.headers, ...CONSOLE_HEADERS } });
    }
    return send(request, file, { ...CONSOLE_HEADERS, "cache-control": IMMUTABLE, vary: "Accept-Encoding" });
  };
}
