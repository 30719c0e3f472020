// Runs after `tsc` (see package.json): tsc emits the library (JavaScript + declarations); esbuild then bundles the CLI into
// dist/cli.js so a cold start reads one file instead of resolving dozens of modules. Heavy paths
// (GraphQL, prompts, Redis) stay behind dynamic import() and land in lazily loaded chunks.
import { chmodSync } from "node:fs";
import { build } from "esbuild";

await build({
  entryPoints: { cli: "cli.ts" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  chunkNames: "chunks/[name]-[hash]",
  minifySyntax: true,
  legalComments: "none",
  // ioredis is large, CommonJS and optional: resolve it from node_modules when a Redis store is used.
  external: ["ioredis"],
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  allowOverwrite: true,
  logLevel: "warning",
});
chmodSync("dist/cli.js", 0o755);
