import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["tests/global-setup.ts"],
    // Let Vite resolve graphql-http's own `import "graphql"` too, so tests load one graphql instance
    // (Vite would otherwise give our sources graphql's ESM build and graphql-http Node's CJS one).
    server: { deps: { inline: ["graphql-http"] } },
  },
});
