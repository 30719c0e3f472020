// Builds the web console (console/app.ts: keys, audit trail, and the /authorize consent page) into
// <out>/console/ (the layout is in ./_page-build.mjs): plain DOM, no framework.
import { buildPage } from "./_page-build.mjs";

/** The console promises at most this much gzipped JavaScript; the build fails beyond it. */
const MAX_GZIP_JS = 60 * 1024;

/** Bundles and precompresses the console into `<out>/console`. */
export async function buildConsole(out) {
  await buildPage({
    out,
    name: "console",
    entry: "console/app.ts",
    title: "service-api console",
    // Relative URLs: from /console and from /authorize alike they name /console/<file>.
    prefix: "console/",
    noscript: "The console needs JavaScript. The GraphQL endpoint is POST /graphql.",
    maxGzipJs: MAX_GZIP_JS,
  });
}
