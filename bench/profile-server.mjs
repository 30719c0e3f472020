// A server under test for bench/profile.mjs, with a CPU profiler that SIGUSR2 starts and, sent again,
// stops (the profile goes to --out as a .cpuprofile, then "profiled" on stderr), so the warm-up is left out.
// The service runs from the unbundled ES modules in dist/lib/ (the same code as dist/cli.cjs's bundle),
// so that every function in the profile is named by its lib/ file.
//
// node bench/profile-server.mjs --out FILE --interval µs TARGET [--port P --store DIR | --keys FILE]
//   service        `serve` as shipped: runServe() of lib/cli/commands/serve.ts (LOG_LEVEL from the env)
//   service-quiet  the library's serve() with neither access log nor metrics (no CLI switch does this)
//   mercurius      bench/mercurius-server.mjs
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const target = process.argv[2];
const session = new Session();
session.connect();
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
await post("Profiler.enable");
await post("Profiler.setSamplingInterval", { interval: Number(arg("--interval") ?? 200) });
let running = false;
process.on("SIGUSR2", async () => {
  if (!running) return void (running = true, await post("Profiler.start"));
  const { profile } = await post("Profiler.stop");
  running = false;
  writeFileSync(arg("--out"), JSON.stringify(profile));
  process.stderr.write("profiled\n");
});

if (target === "service") {
  const { runServe } = await import("../dist/lib/cli/commands/serve.js");
  await runServe({ port: arg("--port"), store: arg("--store") }, { log: (line) => process.stderr.write(line + "\n") });
  process.exit(0);
} else if (target === "service-quiet") {
  const { serve } = await import("../dist/lib/http/serve.js");
  const { openKeyStore, parseStoreSpec } = await import("../dist/lib/store/config.js");
  const store = await openKeyStore(parseStoreSpec(arg("--store")), () => {});
  const server = await serve({ store, port: Number(arg("--port")) });
  process.once("SIGTERM", () => server.close().then(() => store.close()).then(() => process.exit(0)));
} else if (target === "mercurius") {
  await import("./mercurius-server.mjs");
} else {
  throw new Error(`unknown target ${target}`);
}
