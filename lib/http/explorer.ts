/**
 * The explorer's assets (GraphiQL with an API-key field), built into `dist/explorer/` by the build
 * (scripts/explorer-build.mjs): the page, no-cache and under a strict Content-Security-Policy; the
 * hashed script and style, immutable; each precompressed (br, gzip) and chosen by Accept-Encoding.
 * Only the files the build's manifest names are served. Loaded by `explorer-route.ts` on the first
 * browser request; files are read then, and kept in memory.
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { errorResponse } from "./responses.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

type Body = Uint8Array<ArrayBuffer>;
/** Answers the page (`/graphql`) or a file under `assets`. */
type Explorer = (request: ServiceRequest, pathname: string) => Promise<ServiceResponse<string | Body>>;
interface Asset {
  type: string;
  identity: Body;
  gzip: Body;
  br: Body;
}
interface Manifest {
  page: string;
  /** File name -> media type. */
  files: Record<string, string>;
}

/** The page may load only its own script and style, and talk only to its own origin. */
export const EXPLORER_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const COMMON = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
const IMMUTABLE = "public, max-age=31536000, immutable";

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>service-api explorer</title>
<p>The explorer is part of the built package (<code>npm install service-api</code>, or <code>npm run build</code>
in a clone); this copy has no <code>dist/explorer/</code>, as when running from the sources under Deno.
The GraphQL endpoint works: <code>POST /graphql</code> with <code>Authorization: Bearer &lt;API key&gt;</code>.</p>
`;

/** The built assets: `explorer/` beside this module's folder or one above it (sources, tsc output, bundles). */
async function findAssets(): Promise<{ dir: string; manifest: Manifest } | null> {
  if (!import.meta.url.startsWith("file:")) return null;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4; up++, dir = dirname(dir)) {
    for (const candidate of [join(dir, "explorer"), join(dir, "dist", "explorer")]) {
      const text = await readFile(join(candidate, "manifest.json"), "utf8").catch(() => null);
      if (text !== null) return { dir: candidate, manifest: JSON.parse(text) as Manifest };
    }
  }
  return null;
}

/** br if accepted, else gzip if accepted, else none (`q=0` refuses; `*` stands for the rest). */
export function pickEncoding(header: string | null): "br" | "gzip" | "identity" {
  if (!header) return "identity";
  const weights = new Map<string, number>();
  for (const part of header.toLowerCase().split(",")) {
    const [name, ...params] = part.split(";").map((piece) => piece.trim());
    const q = params.find((param) => param.startsWith("q="));
    weights.set(name, q ? Number(q.slice(2)) || 0 : 1);
  }
  const accepts = (name: string) => (weights.get(name) ?? weights.get("*") ?? 0) > 0;
  return accepts("br") ? "br" : accepts("gzip") ? "gzip" : "identity";
}

/**
 * Creates the explorer, serving its files under `assets` (a path ending in `/`); reads the manifest now
 * and each file on its first request.
 */
export async function createExplorer(assets: string): Promise<Explorer> {
  const found = await findAssets();
  if (!found) {
    return () =>
      Promise.resolve({
        status: 501,
        headers: { ...COMMON, "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-security-policy": "default-src 'none'" },
        body: NOT_BUILT,
      });
  }
  const { dir, manifest } = found;
  // A Map of the manifest's names: a request names a file exactly, or gets 404 (no paths, no traversal).
  const types = new Map(Object.entries(manifest.files));
  const cache = new Map<string, Promise<Asset>>();
  const load = (file: string): Promise<Asset> => {
    let asset = cache.get(file);
    if (!asset) {
      const path = join(dir, file);
      asset = Promise.all([readFile(path), readFile(`${path}.gz`), readFile(`${path}.br`)]).then(([identity, gzip, br]) => ({
        type: types.get(file)!,
        identity,
        gzip,
        br,
      }));
      asset.catch(() => cache.delete(file));
      cache.set(file, asset);
    }
    return asset;
  };
  const send = async (request: ServiceRequest, file: string, headers: Record<string, string>): Promise<ServiceResponse<Body>> => {
    const asset = await load(file);
    const encoding = pickEncoding(request.headers.get("accept-encoding"));
    return {
      status: 200,
      headers: {
        ...COMMON,
        ...headers,
        "content-type": asset.type,
        ...(encoding === "identity" ? {} : { "content-encoding": encoding }),
      },
      body: asset[encoding],
    };
  };
  return (request, pathname) => {
    if (pathname === "/graphql") {
      // The same URL answers JSON to GraphQL clients: caches must key on Accept too.
      return send(request, manifest.page, {
        "cache-control": "no-cache",
        vary: "Accept, Accept-Encoding",
        "content-security-policy": EXPLORER_CSP,
        "x-frame-options": "DENY",
      });
    }
    const file = pathname.slice(assets.length);
    if (file === manifest.page || !types.has(file)) {
      return Promise.resolve(errorResponse(404, "NOT_FOUND", "Not found: no such explorer file"));
    }
    return send(request, file, { "cache-control": IMMUTABLE, vary: "Accept-Encoding" });
  };
}
