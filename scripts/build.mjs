// Builds dist/:
//   dist/mod.js, dist/lib/*.js   the library, emitted by tsc (JavaScript + declarations)
//   dist/cli.cjs                 the command: a small loader (scripts/cli-loader.cjs) that runs
//   dist/cli-main.cjs            the CLI's start-up path (argv, store, create/delete/list), one
//                                CommonJS file, from
//   dist/cli-main.<v8>.cache     V8's code cache for it, made here by running one create with this
//                                Node (used only by the same V8; see the loader)
//   dist/lazy/*.js               what only some commands need (GraphQL service, HTTP client, prompts,
//                                Redis, consola), as ES modules loaded by import() on demand
//   dist/explorer/               the browser explorer's assets (scripts/explorer-build.mjs), read by the
//                                service only when a browser asks for them
//   dist/console/                the web console's assets (scripts/console-build.mjs), likewise
//
// Start-up is the business of this file and the loader alone; library code is written plainly.
// Why CommonJS for the start-up path: on a cold start Node's ES module loader costs about a tenth
// of a create (it loads its own machinery, fs/promises and readline, and reads files
// asynchronously), and every `import ... from "node:fs"` builds a facade that reads every export,
// which loads the streams modules. require() does neither. The lazy parts stay ES modules, which
// lets esbuild share code between them; they hold their own copies of the few modules they share
// with the start-up path, which is why errors are recognised with isServiceError(), not instanceof.
//
// Everything is built in a scratch directory and swapped in with rename(2), so a process that runs
// the CLI during a rebuild sees the old build or the new one, never a missing or partial one.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { build } from "esbuild";
import { buildExplorer } from "./explorer-build.mjs";
import { buildConsole } from "./console-build.mjs";

const ROOT = resolve(import.meta.dirname, "..");
/** Each module the start-up path imports dynamically, and its file under dist/lazy/. */
const LAZY = {
  "lib/http/serve.ts": "serve",
  "lib/http/ops.ts": "ops",
  "lib/client/remote.ts": "remote",
  "lib/cli/prompts.ts": "prompts",
  "lib/cli/completion-script.ts": "completion",
  "lib/cli/scan-command.ts": "scan",
  "lib/store/drivers/redis.ts": "redis",
  "lib/http/webhooks/worker.ts": "webhooks",
  "lib/http/webhooks/send.ts": "webhook-send",
  "lib/client/remote-webhooks.ts": "remote-webhooks",
  "consola/basic": "consola-basic",
};

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  minifySyntax: true,
  // graphql-js checks `instanceof` across realms on every value unless NODE_ENV is production.
  define: { "process.env.NODE_ENV": '"production"' },
  legalComments: "none",
  logLevel: "warning",
  // Regular expressions with Unicode property escapes (\p{...}) stay literals, which Node 20 and later
  // all read; esbuild would otherwise rewrite them as `new RegExp(...)` calls, which it must then keep
  // even when nothing uses them (valibot's EMOJI_REGEX, built at every start).
  supported: { "regexp-unicode-property-escapes": true },
};

/**
 * Imported on demand by cli.ts and the apikey command, but light, so bundled into the start-up path:
 * each module's top-level code still runs only when it is imported (esbuild wraps it), so a create never
 * builds the help text, the typo suggestions, the other commands' definitions or the list and audit
 * tables, and none of those needs the ES module loader.
 */
const INLINE = new Set([
  "lib/cli/commands/apikey.ts",
  "lib/cli/commands/serve.ts",
  "lib/cli/commands/completion.ts",
  "lib/cli/commands/doctor.ts",
  "lib/cli/commands/webhook.ts",
  "lib/cli/help.ts",
  "lib/cli/suggest.ts",
  "lib/cli/format.ts",
  "lib/cli/lifecycle.ts",
  "lib/cli/store-where.ts",
  "lib/cli/transfer.ts",
  "lib/core/filter.ts",
  "lib/cli/dry-run.ts",
  "lib/cli/list-stream.ts",
]);

/** Points the start-up bundle's dynamic imports at the lazy bundles instead of inlining them. */
const lazyImports = {
  name: "lazy-imports",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind !== "dynamic-import") return undefined;
      if (args.path.startsWith("node:")) return { path: args.path, external: true };
      const key = args.path.startsWith(".") ? relative(ROOT, resolve(args.resolveDir, args.path)) : args.path;
      if (INLINE.has(key)) return undefined;
      const name = LAZY[key];
      if (!name) return { errors: [{ text: `${args.path} is imported lazily but has no bundle in LAZY (scripts/build.mjs)` }] };
      return { path: `./lazy/${name}.js`, external: true };
    });
  },
};

const out = `.build-${process.pid}`;
const old = `.build-old-${process.pid}`;
try {
  // Started first: esbuild and the compression run outside this thread while tsc runs.
  const explorer = buildExplorer(out);
  explorer.catch(() => {}); // awaited below; this keeps a failure from skipping the clean-up
  const webConsole = buildConsole(out);
  webConsole.catch(() => {});
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--outDir", out], {
    stdio: "inherit",
  });
  // tsc also emits cli.ts as an ES module; the CLI that runs is the bundle below.
  for (const file of ["cli.js", "cli.d.ts"]) rmSync(`${out}/${file}`);
  await build({
    ...common,
    entryPoints: ["cli.ts"],
    outfile: `${out}/cli-main.cjs`,
    format: "cjs",
    plugins: [lazyImports],
  });
  // The loader runs the bundle as a function body: no hashbang, and its import() calls go through the
  // loader's `lazyImport` (see scripts/cli-loader.cjs). Every one of them must be rewritten. When the
  // bundle is required instead, it defines `lazyImport` as import() itself.
  let main = readFileSync(`${out}/cli-main.cjs`, "utf8")
    .replace(/^#!.*\n/, "")
    .replace(/\bimport\((?="(?:\.\/lazy\/|node:))/g, "lazyImport(");
  // For `import * as fs from "node:fs"` esbuild builds a copy of the module with a getter per export
  // (__toESM: about a millisecond for node:fs and node:crypto together, at every start). A built-in
  // module's exports object serves as the namespace itself, provided nothing reads the copy's `default`
  // (a default import does: those are left as they are).
  main = main.replace(/\b([\w$]+) = __toESM\(require\("(node:[\w/]+)"\), 1\)/g, (all, name, id) =>
    main.includes(`${name}.default`) ? all : `${name} = require("${id}")`);
  if (/\bimport\(/.test(main)) throw new Error("cli-main.cjs has an import() the loader does not route");
  if (!main.startsWith('"use strict";\n')) throw new Error("cli-main.cjs no longer starts with \"use strict\"");
  const prelude = "var lazyImport = lazyImport || ((specifier) => import(specifier));\n";
  writeFileSync(`${out}/cli-main.cjs`, main.replace('"use strict";\n', `"use strict";\n${prelude}`));
  copyFileSync("scripts/cli-loader.cjs", `${out}/cli.cjs`);
  await build({
    ...common,
    entryPoints: Object.fromEntries(Object.entries(LAZY).map(([path, name]) => [name, path])),
    outdir: `${out}/lazy`,
    format: "esm",
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    // ioredis is bundled too (into the Redis bundle, loaded only for redis:// stores): resolving its
    // CommonJS tree from node_modules at run time cost several times more than reading one file.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  });
  chmodSync(`${out}/cli.cjs`, 0o755);
  await explorer;
  await webConsole;
  try {
    renameSync("dist", old);
  } catch {}
  renameSync(out, "dist");
  // One create against a throw-away store compiles what a create runs; the loader saves V8's cache of it
  // as dist/cli-main.<this Node's V8 version>.cache. Made here, after the swap: V8 keeps the file name a
  // cache was made under, and one made in the scratch folder put `.build-<pid>/` in every stack trace.
  // Until it exists the CLI runs without it (the loader writes it whole, then renames it into place).
  const scratch = mkdtempSync(join(tmpdir(), "service-api-build-"));
  try {
    execFileSync(
      process.execPath,
      ["dist/cli.cjs", "apikey", "--create", "--name", "code cache", "--roles", "ADMIN", "--json", "--store", join(scratch, "keys")],
      { env: { ...process.env, SERVICE_API_CODE_CACHE: "write", LOG_LEVEL: "" }, stdio: "ignore" },
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
} finally {
  rmSync(out, { recursive: true, force: true });
  rmSync(old, { recursive: true, force: true });
}
