/**
 * The built files of a browser page the service serves (the explorer, the console), as scripts/_page-build.mjs
 * lays them out: each file precompressed (br, gzip) beside it, and a manifest naming the only files that may be
 * served, with their media types. Files are read on their first request and kept in memory.
 */
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

export type Body = Uint8Array<ArrayBuffer>;
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

/** A page's built files: `page` is the HTML file's name; `has` tells a file the manifest names. */
export interface PageAssets {
  page: string;
  has(file: string): boolean;
  /** The file, in the encoding the request accepts, with `headers` (no body for HEAD). */
  send(request: ServiceRequest, file: string, headers: Record<string, string>): Promise<ServiceResponse<Body>>;
}

/** The page served where `dist/<name>/` is missing (the sources under Deno): what to do instead. */
export const notBuilt = (name: string): string => `<!doctype html><meta charset="utf-8"><title>service-api ${name}</title>
<p>The ${name} is part of the built package (<code>npm install service-api-keys</code>, or <code>npm run build</code>
in a clone); this copy has no <code>dist/${name}/</code>, as when running from the sources under Deno.
The GraphQL endpoint works: <code>POST /graphql</code> with <code>Authorization: Bearer &lt;API key&gt;</code>.</p>
`;

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

/** The built files of `name`: `<name>/` beside this module's folder or up to three above it (sources, tsc output, bundles). */
export async function findPageAssets(name: string): Promise<PageAssets | null> {
  if (!import.meta.url.startsWith("file:")) return null;
  let found: { dir: string; manifest: Manifest } | null = null;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 4 && !found; up++, dir = dirname(dir)) {
    for (const candidate of [join(dir, name), join(dir, "dist", name)]) {
      const text = await readFile(join(candidate, "manifest.json"), "utf8").catch(() => null);
      if (text !== null) {
        found = { dir: candidate, manifest: JSON.parse(text) as Manifest };
        break;
      }
    }
  }
  if (!found) return null;
  const { dir: root, manifest } = found;
  // A Map of the manifest's names: a request names a file exactly, or gets 404 (no paths, no traversal).
  const types = new Map(Object.entries(manifest.files));
  const cache = new Map<string, Promise<Asset>>();
  const load = (file: string): Promise<Asset> => {
    let asset = cache.get(file);
    if (!asset) {
      const path = join(root, file);
      asset = Promise.all([readFile(path), readFile(`${path}.gz`), readFile(`${path}.br`)])
        .then(([identity, gzip, br]) => ({ type: types.get(file)!, identity, gzip, br }));
      asset.catch(() => cache.delete(file));
      cache.set(file, asset);
    }
    return asset;
  };
  return {
    page: manifest.page,
    has: (file) => types.has(file),
    send: async (request, file, headers) => {
      const asset = await load(file);
      const encoding = pickEncoding(request.headers.get("accept-encoding"));
      const encoded: Record<string, string> = encoding === "identity" ? {} : { "content-encoding": encoding };
      const body = request.method === "HEAD" ? null : asset[encoding];
      return { status: 200, headers: { ...headers, "content-type": asset.type, ...encoded }, body };
    },
  };
}
