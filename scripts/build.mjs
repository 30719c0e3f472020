// Builds dist/: tsc emits the library (JavaScript + declarations); esbuild then bundles the CLI into
// dist/cli.js so a cold start reads one file instead of resolving dozens of modules. Heavy paths
// (GraphQL, prompts, Redis) stay behind dynamic import() and land in lazily loaded chunks.
// Everything is built in a scratch directory and swapped in with rename(2), so a process that runs
// dist/cli.js during a rebuild sees the old build or the new one, never a missing or partial one.
import { execFileSync } from "node:child_process";
import { chmodSync, renameSync, rmSync } from "node:fs";
import { build } from "esbuild";

const out = `.build-${process.pid}`;
const old = `.build-old-${process.pid}`;
try {
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--outDir", out], {
    stdio: "inherit",
  });
  await build({
    entryPoints: { cli: "cli.ts" },
    outdir: out,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "chunks/[name]-[hash]",
    minifySyntax: true,
    // graphql-js checks `instanceof` across realms on every value unless NODE_ENV is production.
    define: { "process.env.NODE_ENV": '"production"' },
    legalComments: "none",
    // ioredis is bundled too (into the Redis chunk, loaded only for redis:// stores): resolving its
    // CommonJS tree from node_modules at run time cost several times more than reading one chunk.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    allowOverwrite: true,
    logLevel: "warning",
  });
  chmodSync(`${out}/cli.js`, 0o755);
  try {
    renameSync("dist", old);
  } catch {}
  renameSync(out, "dist");
} finally {
  rmSync(out, { recursive: true, force: true });
  rmSync(old, { recursive: true, force: true });
}
