import { dirname, join } from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  // graphql-jit's ESM build imports its own CommonJS files (`./execution.js`, which require Node's
  // CJS graphql) and graphql's files by path: point both at ESM, so that it shares the one graphql
  // instance our sources get (else every compile fails on "another module or realm" and falls back).
  plugins: [{
    name: "graphql-jit-esm",
    enforce: "pre",
    resolveId(source, importer) {
      if (importer?.includes("/graphql-jit/dist/") && source.startsWith("./")) {
        return join(dirname(importer), `${source.replace(/\.m?js$/, "")}.mjs`);
      }
    },
  }],
  resolve: { alias: [{ find: /^graphql\/(.+)\.js$/, replacement: "graphql/$1.mjs" }] },
  test: {
    include: ["tests/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["tests/global-setup.ts"],
    // Let Vite resolve graphql-http's and graphql-jit's own `import "graphql"` too, so tests load one
    // graphql instance (Vite would otherwise give our sources graphql's ESM build and them Node's CJS one).
    server: { deps: { inline: ["graphql-http", "graphql-jit"] } },
  },
});
