// Builds the explorer (explorer/app.ts: GraphiQL and an API-key field) into <out>/explorer/:
//   index.html                  the page, no-cache; refers to the hashed files below, no inline script
//   explorer.<hash>.js / .css   GraphiQL, React and the app, minified; immutable (hash in the name)
//   *.gz, *.br                  each file precompressed, so the service never compresses at run time
//   manifest.json               the files the service may serve, with their media types (anything else: 404)
// Everything comes from devDependencies (graphiql, react, react-dom): the page needs no internet.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { basename, join } from "node:path";
import { brotliCompress, constants, gzip } from "node:zlib";
import { build } from "esbuild";

const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8" };

/** Bundles and precompresses the explorer into `<out>/explorer`. */
export async function buildExplorer(out) {
  const dir = join(out, "explorer");
  mkdirSync(dir, { recursive: true });
  const result = await build({
    entryPoints: { explorer: "explorer/app.ts" },
    outdir: dir,
    entryNames: "[name].[hash]",
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["es2020"],
    define: { "process.env.NODE_ENV": '"production"' },
    // GraphiQL's CSS refers to no fonts or images outside itself; anything small is inlined.
    loader: { ".woff": "dataurl", ".woff2": "dataurl", ".svg": "dataurl", ".png": "dataurl" },
    legalComments: "external",
    metafile: true,
    logLevel: "warning",
  });
  const files = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = files.find((file) => file.endsWith(".js"));
  const style = files.find((file) => file.endsWith(".css"));
  if (!script || !style) throw new Error(`explorer build made ${files.join(", ")}, expected a .js and a .css`);
  // Relative to /graphql (the page's own URL), so the page also works behind a path prefix.
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>service-api explorer</title>
<link rel="stylesheet" href="graphql/explorer/${style}">
<script defer src="graphql/explorer/${script}"></script>
</head>
<body><div id="root"><noscript>The explorer needs JavaScript. The GraphQL endpoint is POST /graphql.</noscript></div></body>
</html>
`;
  writeFileSync(join(dir, "index.html"), html);
  const served = ["index.html", script, style];
  const manifest = { page: "index.html", files: {} };
  // Compressed on libuv's threads, so this overlaps the rest of the build.
  await Promise.all(served.map(async (file) => {
    const raw = readFileSync(join(dir, file));
    const [gz, br] = await Promise.all([
      promisify(gzip)(raw, { level: 9 }),
      promisify(brotliCompress)(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
    ]);
    writeFileSync(join(dir, `${file}.gz`), gz);
    writeFileSync(join(dir, `${file}.br`), br);
    manifest.files[file] = TYPES[file.slice(file.lastIndexOf("."))];
  }));
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
}
