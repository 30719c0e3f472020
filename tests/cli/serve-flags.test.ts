// Empty values of serve's list flags are values, not crashes: cac hands "" over as the number 0, which
// once reached `.trim()` and `.split()` as "Unexpected error". An empty CORS list means CORS off; an empty
// metrics allow-list means nobody reads /metrics without a key.
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/cli.ts";
import { startServer } from "../helpers/server.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe("serve list flags given empty", () => {
  it.each([["--cors-origin"], ["--metrics-allow"]])("%s \"\" starts the service and means an empty list", async (flag) => {
    const server = await startServer({ store: `${tmp.dir}/keys`, args: [flag, ""] });
    try {
      expect(server.stderr()).not.toMatch(/Unexpected error/);
      const metrics = await fetch(`${server.url}/metrics`);
      // Loopback is no longer allowed without a key once the allow-list is empty.
      expect(metrics.status).toBe(flag === "--metrics-allow" ? 403 : 200);
      const preflight = await fetch(`${server.url}/graphql`, { method: "OPTIONS", headers: { origin: "https://app.example.com" } });
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await server.stop();
    }
  });
});

describe("a bare `service-api serve`", () => {
  it.each([["node"], ["deno"]] as const)("serves with its settings from the environment (%s), as docs/service.md's `PORT=8080 service-api serve`", async (runtime) => {
    const store = `${tmp.dir}/bare-${runtime}`;
    const server = await startServer({
      store,
      runtime,
      argv: ["serve"],
      env: { PORT: "0", SERVICE_API_STORE: `fs:${store}`, LOG_LEVEL: "warn" },
    });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
