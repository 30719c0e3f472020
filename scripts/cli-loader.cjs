#!/usr/bin/env node
// dist/cli.cjs: starts the CLI bundle (dist/cli-main.cjs) from the V8 code cache the build made for it
// (dist/cli-main.cache), so a cold start neither parses the bundle nor compiles the functions a command
// runs: about 9 ms of a create. Node 22 does this itself (module.enableCompileCache); Node 20 does not.
// A cache V8 refuses (another Node version, other V8 flags) or a missing one only costs that gain.
//
// The bundle's dynamic imports (the lazily loaded commands) are routed through `lazyImport` below:
// inside a vm script, import() needs an experimental vm option that prints a warning.
"use strict";
const { readFileSync, writeFileSync } = require("node:fs");
const { createRequire } = require("node:module");
const { join } = require("node:path");
const { pathToFileURL } = require("node:url");
const { Script } = require("node:vm");

const file = join(__dirname, "cli-main.cjs");
const cacheFile = join(__dirname, "cli-main.cache");
let cachedData;
try {
  cachedData = readFileSync(cacheFile);
} catch {}

const lazyImport = (specifier) => import(specifier.startsWith(".") ? pathToFileURL(join(__dirname, specifier)).href : specifier);
const script = new Script(
  `(function (exports, require, module, __filename, __dirname, lazyImport) {${readFileSync(file, "utf8")}\n})`,
  { filename: file, cachedData },
);
// SERVICE_API_CODE_CACHE=write: the build runs one create so, which saves the cache of all it compiled.
// =report: says on stderr whether V8 took the cache (tests/startup.test.ts).
const mode = process.env.SERVICE_API_CODE_CACHE;
if (mode === "write") process.once("exit", () => writeFileSync(cacheFile, script.createCachedData()));
if (mode === "report") process.stderr.write(`code cache: ${!cachedData ? "absent" : script.cachedDataRejected ? "refused" : "used"}\n`);
const mod = { exports: {} };
script.runInThisContext()(mod.exports, createRequire(file), mod, file, __dirname, lazyImport);
