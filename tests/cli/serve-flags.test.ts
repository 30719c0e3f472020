// Empty values of serve's list flags are values, not crashes: cac hands "" over as the number 0, which
// once reached `.trim()` and `.split()` as "Unexpected error". An empty CORS list means CORS off; an empty
// metrics allow-list means nobody reads /metrics without a key.
import { afterAll, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { runCli, tempDir } from "../helpers/cli.ts";
import { AS_NOBODY, lacksRoot } from "../helpers/users.ts";
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

describe("serve's listening line", () => {
  it("fits 80 columns on loopback, naming the paths once", async () => {
    const server = await startServer({ store: `${tmp.dir}/line` });
    try {
      const line = server.stderr().split("\n").find((l) => l.includes("listening on"))!;
      expect(line).toBe(`service-api listening on ${server.url} (/graphql, /console, /healthz)`);
      expect(line.length).toBeLessThanOrEqual(80);
    } finally {
      await server.stop();
    }
  });
});

describe("serve that cannot listen", () => {
  const lastLine = (text: string) => text.trimEnd().split("\n").at(-1);

  it("on a busy port exits 1 with the error as its last line, naming --port and PORT", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      const taken = await runCli(["serve", "--port", String(port), "--store", `${tmp.dir}/busy`]);
      expect(taken.code).toBe(1);
      expect(lastLine(taken.stderr)).toBe(
        `Error: Cannot listen on 127.0.0.1:${port}: address already in use (another service-api, or another program). Stop it, or choose another port with --port <port> or PORT (0 picks a free one)`,
      );
    } finally {
      blocker.close();
    }
  });

  it.each([
    ["nohost.invalid", "the host name does not resolve"],
    ["192.0.2.1", "not an address of this machine"],
  ])("on --host %s exits 2 saying why and naming --host and HOST", async (host, why) => {
    const bad = await runCli(["serve", "--host", host, "--port", "0", "--store", `${tmp.dir}/host`]);
    expect(bad.code).toBe(2);
    expect(lastLine(bad.stderr)).toMatch(`Error: Cannot listen on ${host}:0: ${why}. Use --host <address> or HOST`);
  });

  it.skipIf(lacksRoot)("on a port below 1024 without rights exits 1 saying what the port needs", async () => {
    const low = await runCli(["serve", "--port", "1000", "--store", "memory:"], { as: AS_NOBODY });
    expect(low.code).toBe(1);
    expect(lastLine(low.stderr)).toMatch(/^Error: Cannot listen on 127\.0\.0\.1:1000: ports below 1024 need root or CAP_NET_BIND_SERVICE\. .*--port <port> or PORT/);
  });
});
