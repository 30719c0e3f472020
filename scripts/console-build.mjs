// Builds the web console (console/app.ts: keys, audit trail, and the /authorize consent page) into <out>/console/:
//   index.html                  the one page of both /console and /authorize, no-cache; no inline script or style
//   console.<hash>.js / .css    the app, plain DOM, minified; immutable (hash in the name)
//   *.gz, *.br                  each file precompressed, so the service never compresses at run time
//   manifest.json               the files the service may serve, with their media types (anything else: 404)
// Nothing is fetched from outside the service: the page works offline.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { basename, join } from "node:path";
import { brotliCompress, constants, gzip } from "node:zlib";
import { build } from "esbuild";

const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };
/** The console promises at most this much gzipped JavaScript; the build fails beyond it. */
const MAX_GZIP_JS = 60 * 1024;

/** Bundles and precompresses the console into `<out>/console`. */
export async function buildConsole(out) {
  const dir = join(out, "console");
  mkdirSync(dir, { recursive: true });
  const result = await build({
    entryPoints: { console: "console/app.ts" },
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
  });
  const files = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = files.find((file) => file.endsWith(".js"));
  const style = files.find((file) => file.endsWith(".css"));
  if (!script || !style) throw new Error(`console build made ${files.join(", ")}, expected a .js and a .css`);
  // Relative URLs: from /console and from /authorize alike they name /console/<file>.
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>service-api console</title>
<link rel="stylesheet" href="console/${style}">
<script defer src="console/${script}"></script>
</head>
<body><div id="root"><noscript>The console needs JavaScript. The GraphQL endpoint is POST /graphql.</noscript></div></body>
</html>
`;
  writeFileSync(join(dir, "index.html"), html);
  const served = ["index.html", script, style];
  const manifest = { page: "index.html", files: {} };
  await Promise.all(served.map(async (file) => {
    const raw = readFileSync(join(dir, file));
    const [gz, br] = await Promise.all([
      promisify(gzip)(raw, { level: 9 }),
      promisify(brotliCompress)(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
    ]);
    if (file === script && gz.length > MAX_GZIP_JS) throw new Error(`console script is ${gz.length} bytes gzipped, over the ${MAX_GZIP_JS} allowed`);
    writeFileSync(join(dir, `${file}.gz`), gz);
    writeFileSync(join(dir, `${file}.br`), br);
    manifest.files[file] = TYPES[file.slice(file.lastIndexOf("."))];
  }));
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
}
