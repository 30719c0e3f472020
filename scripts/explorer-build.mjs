// Builds the explorer (explorer/app.ts: GraphiQL and an API-key field) into <out>/explorer/ (the layout is in
// ./_page-build.mjs). Everything comes from devDependencies (graphiql, react, react-dom): no internet needed.
import { buildPage } from "./_page-build.mjs";

/** Bundles and precompresses the explorer into `<out>/explorer`. */
export async function buildExplorer(out) {
  await buildPage({
    out,
    name: "explorer",
    entry: "explorer/app.ts",
    title: "service-api explorer",
    // Relative to /graphql (the page's own URL), so the page also works behind a path prefix.
    prefix: "graphql/explorer/",
    noscript: "The explorer needs JavaScript. The GraphQL endpoint is POST /graphql.",
    esbuild: {
      define: { "process.env.NODE_ENV": '"production"' },
      // GraphiQL's CSS refers to no fonts or images outside itself; anything small is inlined.
      loader: { ".woff": "dataurl", ".woff2": "dataurl", ".svg": "dataurl", ".png": "dataurl" },
      legalComments: "external",
    },
  });
}
