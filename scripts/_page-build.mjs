// Builds one browser page of the service (the explorer, the console) into <out>/<name>/:
//   index.html                 the page, no-cache; refers to the hashed files below, no inline script or style
//   <name>.<hash>.js / .css    the bundle, minified; immutable (hash in the name)
//   *.gz, *.br                 each file precompressed, so the service never compresses at run time
//   manifest.json              the files the service may serve, with their media types (anything else: 404)
// Nothing is fetched from outside the service: the pages work offline.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { basename, join } from "node:path";
import { brotliCompress, constants, gzip } from "node:zlib";
import { build } from "esbuild";

const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };

/**
 * Bundles `entry` and writes the page. `prefix` is what the page's URLs put before a file name (relative to the
 * page's own URL); `maxGzipJs`, when given, fails the build if the gzipped script is larger.
 * @param {{ out: string, name: string, entry: string, title: string, prefix: string, noscript: string,
 *   esbuild?: import("esbuild").BuildOptions, maxGzipJs?: number }} page
 */
export async function buildPage({ out, name, entry, title, prefix, noscript, esbuild = {}, maxGzipJs }) {
  const dir = join(out, name);
  mkdirSync(dir, { recursive: true });
  const result = await build({
    entryPoints: { [name]: entry },
    outdir: dir,
    entryNames: "[name].[hash]",
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["es2020"],
    legalComments: "none",
    metafile: true,
    logLevel: "warning",
    ...esbuild,
  });
  const files = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = files.find((file) => file.endsWith(".js"));
  const style = files.find((file) => file.endsWith(".css"));
  if (!script || !style) throw new Error(`${name} build made ${files.join(", ")}, expected a .js and a .css`);
  writeFileSync(join(dir, "index.html"), `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="stylesheet" href="${prefix}${style}">
<script defer src="${prefix}${script}"></script>
</head>
<body><div id="root"><noscript>${noscript}</noscript></div></body>
</html>
`);
  const manifest = { page: "index.html", files: {} };
  // Compressed on libuv's threads, so this overlaps the rest of the build.
  await Promise.all(["index.html", script, style].map(async (file) => {
    const raw = readFileSync(join(dir, file));
    const [gz, br] = await Promise.all([
      promisify(gzip)(raw, { level: 9 }),
      promisify(brotliCompress)(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
    ]);
    if (file === script && maxGzipJs !== undefined && gz.length > maxGzipJs) {
      throw new Error(`${name} script is ${gz.length} bytes gzipped, over the ${maxGzipJs} allowed`);
    }
    writeFileSync(join(dir, `${file}.gz`), gz);
    writeFileSync(join(dir, `${file}.br`), br);
    manifest.files[file] = TYPES[file.slice(file.lastIndexOf("."))];
  }));
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
}
