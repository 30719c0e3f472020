#!/usr/bin/env node
// dist/cli.cjs: starts the CLI bundle (dist/cli-main.cjs). All start-up machinery lives here and in
// scripts/build.mjs; docs/performance.md has the measurements behind it (bench/startup-loaders.mjs).
//
// With a V8 code cache made by this Node's V8 (dist/cli-main.<v8 version>.cache, made by the build's
// Node), the bundle runs from it through vm.Script: a cold start then neither parses the bundle nor
// compiles the functions a create runs (the cache was written after one create, so it holds them all),
// 7 to 10 ms of a create on Node 20, 22 and 24. Otherwise (installed with another Node) it is
// required as usual, through module.enableCompileCache() where that exists (Node 22.1+) and the user set
// NODE_COMPILE_CACHE (never Node's default folder in the shared /tmp): it caches only top-level
// compilation, about 3 ms. A cache from another V8 would be refused, so it is not even read.
//
// The bundle's dynamic imports go through `lazyImport`: inside a vm script, import() needs an
// experimental vm option that prints a warning. Required as usual, the bundle defines it as import().
"use strict";
const { readFileSync, renameSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");

const file = join(__dirname, "cli-main.cjs");
const cacheFile = join(__dirname, `cli-main.${process.versions.v8}.cache`);
// SERVICE_API_CODE_CACHE=write: the build runs one create so, which saves the cache of all it compiled.
// =report: says on stderr how the bundle was started (tests/cli/startup.test.ts).
const mode = process.env.SERVICE_API_CODE_CACHE;
let cachedData;
try {
  if (mode !== "write") cachedData = readFileSync(cacheFile);
} catch {}

if (!cachedData && mode !== "write") {
  // Only where the user chose a cache directory (NODE_COMPILE_CACHE): Node's default is a folder in the
  // shared temporary directory, which another local user can prepare, and root would then compile from it.
  // Without a code cache of our own this costs about 3 ms of a create on Node 22 and 24.
  const compileCache = process.env.NODE_COMPILE_CACHE ? require("node:module").enableCompileCache?.() : undefined;
  if (mode === "report") process.stderr.write(`code cache: absent${compileCache?.directory ? ", node compile cache" : ""}\n`);
  require(file);
} else {
  const { pathToFileURL } = require("node:url");
  const { Script } = require("node:vm");
  const lazyImport = (specifier) => import(specifier.startsWith(".") ? pathToFileURL(join(__dirname, specifier)).href : specifier);
  const script = new Script(
    `(function (exports, require, module, __filename, __dirname, lazyImport) {${readFileSync(file, "utf8")}\n})`,
    { filename: file, cachedData },
  );
  if (mode === "write") {
    process.once("exit", () => {
      const part = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(part, script.createCachedData());
      renameSync(part, cacheFile); // a CLI starting meanwhile reads no cache or the whole one
    });
  }
  if (mode === "report") process.stderr.write(`code cache: ${script.cachedDataRejected ? "refused" : "used"}\n`);
  const mod = { exports: {} };
  // This file's own require: the bundle sits beside it, so it resolves what one made for the bundle would;
  // node:module's createRequire would load the ES module loader and source maps with it (0.3-0.6 ms).
  script.runInThisContext()(mod.exports, require, mod, file, __dirname, lazyImport);
}
