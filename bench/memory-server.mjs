// The service on a memory store (the library's createKeyStore and serve, as an embedding program runs
// them), with two keys: a plain one and one with a rate limit and credits never reached in a run. Prints
// its port, then one line of JSON `{ plain, controls }` (the two secrets), and serves until killed.
import { createKeyStore } from "../dist/mod.js";
import { serve } from "../dist/lib/http/serve.js";

const store = createKeyStore();
const plain = await store.create({ name: "plain", roles: ["VIEWER"], permissions: [] });
const controls = await store.create({
  name: "controls", roles: ["VIEWER"], permissions: [],
  rateLimits: [{ limit: 1_000_000, durationMs: 1_000 }], credits: { remaining: 1_000_000_000 },
});
const server = await serve({ store, port: Number(process.argv[process.argv.indexOf("--port") + 1] ?? 0) || 0 });
console.log(server.port);
console.log(JSON.stringify({ plain: plain.key, controls: controls.key }));
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
