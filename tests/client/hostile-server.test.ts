// Remote mode treats everything a server sends as untrusted. A hostile HTTP server on
// port 0, spawned here, answers the CLI (a child process, SERVICE_API_URL/SERVICE_API_KEY) with terminal
// escapes, answers of the wrong shape, endless and trickling bodies, and redirects.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientError, createClient } from "../../lib/client/client.ts";
import { generateSecret } from "../../lib/core/secret.ts";
import { runCli } from "../helpers/cli.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let server: Server;
let url: string;
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on("end", () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const answer = (body: unknown, status = 200): Handler => (_req, res) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
};
const remote = (...args: string[]) =>
  runCli(["apikey", ...args], { env: { SERVICE_API_URL: url, SERVICE_API_KEY: generateSecret(), SERVICE_API_STORE: undefined } });

// Set the window title, clear the screen, an 8-bit CSI, a bidi override, a line break, a bell.
const EVIL = "x\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202egnp.exe\nfake line\u2028";
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/u;
const evilKey = (i: number) => ({
  id: `${EVIL}${i}`,
  name: `${EVIL} name`,
  description: `${EVIL} description`,
  roles: [`ADMIN${EVIL}`],
  createdAt: `2026${EVIL}`,
  permissions: [{ resource: `DOCKER${EVIL}`, actions: [`READ_ANY${EVIL}`] }],
});

describe("remote mode against a hostile server", () => {
  it.each([["plain", []], ["--json", ["--json"]]])("escapes every string of a key list (%s)", async (_, extra) => {
    handler = answer({ data: { apiKeys: [evilKey(1), evilKey(2)] } });
    const result = await remote("--list", ...(extra as string[]));
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toMatch(RAW);
    // JSON output escapes the backslash of our escape once more.
    expect(result.stdout.replaceAll("\\\\", "\\")).toContain("\\u{1b}]0;pwned\\u{7}");
    expect(result.stdout.split("\n").filter((line) => line.startsWith("fake line"))).toEqual([]);
  });

  it("escapes the name, id and secret a create answers with", async () => {
    handler = answer({ data: { apiKey: { create: { ...evilKey(1), key: `sapi_${EVIL}` } } } });
    for (const extra of [[], ["--json"]]) {
      const result = await remote("--create", "--name", "n", "--roles", "ADMIN", ...extra);
      expect(result.code).toBe(0);
      expect(result.stdout + result.stderr).not.toMatch(RAW);
    }
  });

  it("escapes error messages, and keeps the error code and exit status", async () => {
    handler = answer({ errors: [{ message: `Forbidden ${EVIL}`, extensions: { code: "FORBIDDEN" } }] }, 403);
    for (const extra of [[], ["--json"]]) {
      const result = await remote("--list", ...extra);
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).not.toMatch(RAW);
      expect((result.stdout + result.stderr).replaceAll("\\\\", "\\")).toContain("Forbidden x\\u{1b}]0;pwned");
    }
  });

  it.each([["constructor"], ["__proto__"], ["toString"], ["hasOwnProperty"], ["CANCELLED"], ["USAGE"]])(
    "a failure answered with the code %j still fails with exit 1, so a revocation script is not fooled",
    async (code) => {
      handler = answer({ errors: [{ message: "nope", extensions: { code } }], data: null });
      for (const extra of [[], ["--json"]]) {
        const result = await remote("--delete", "--name", "a", ...extra);
        expect(result.code).toBe(1);
        if (extra.length) expect(JSON.parse(result.stdout).code).toBe("INTERNAL");
      }
    },
  );

  it.each([
    ["a key without an id", { data: { apiKeys: [{ name: "n", roles: [], permissions: [], createdAt: "t" }] } }, "apiKeys.0.id: missing"],
    ["a number for a name", { data: { apiKeys: [{ ...evilKey(1), name: 5 }] } }, "apiKeys.0.name: expected string"],
    ["null for the list", { data: { apiKeys: null } }, "apiKeys: expected Array"],
    ["empty data", { data: {} }, "apiKeys: missing"],
    ["errors that are not a list", { errors: "boom", data: null }, "not a GraphQL response"],
    ["a JSON array", [1, 2], "not a GraphQL response"],
    ["text", "<html>hello</html>", "not a GraphQL response"],
  ])("answers %s with a clear one-line error, not a crash", async (_, body, message) => {
    handler = answer(body);
    const result = await remote("--list");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/Cannot read properties|TypeError|\n\s+at /);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("stops reading an endless answer at 4 MiB, quickly and without buffering it", async () => {
    let written = 0;
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(64 * 1024, "a");
      res.write('{"data":{"apiKeys":[{"name":"');
      const pump = () => {
        while (!res.destroyed && written < 2 ** 30) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
      };
      res.on("close", () => res.destroy());
      pump();
    };
    const started = Date.now();
    const result = await remote("--list");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("larger than 4 MiB");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it("gives up on an answer that trickles in, at the request timeout", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 50);
      res.on("close", () => clearInterval(timer));
    };
    const client = createClient({ baseUrl: url, apiKey: generateSecret(), timeoutMs: 600 });
    const started = Date.now();
    const error = await client.request("{ me { id } }").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).message).toContain("no complete answer within 600 ms");
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("does not follow a redirect, so the key is not sent elsewhere", async () => {
    const other = createServer((_req, res) => res.end("{}"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    let reached = 0;
    other.on("request", () => reached++);
    handler = (_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${(other.address() as AddressInfo).port}/graphql` });
      res.end();
    };
    const result = await remote("--list");
    other.close();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("HTTP 307");
    expect(reached).toBe(0);
  });
});

describe("the --url itself", () => {
  it.each([["http://admin:pa55w0rd@127.0.0.1:1"], ["ftp://admin:pa55w0rd@host"], ["http://x:pa55/w0rd@host"]])(
    "refuses credentials in %s without repeating them",
    async (given) => {
      const result = await runCli(["apikey", "--list"], { env: { SERVICE_API_URL: given, SERVICE_API_KEY: generateSecret() } });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Invalid --url");
      expect(result.stderr).not.toMatch(/pa55|w0rd/);
    },
  );
});
