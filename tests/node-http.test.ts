// The Node adapter reads headers from `rawHeaders` instead of building `req.headers`; it must give
// exactly what `req.headers` would, repeated headers included (kept first, or joined).
import { createServer } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rawHeader } from "../lib/_node-http.ts";

const NAMES = ["authorization", "x-api-key", "accept", "content-type", "content-length", "cookie", "x-missing", "host", "user-agent"];
let server: ReturnType<typeof createServer>;
let port = 0;
let seen: Array<{ name: string; ours: string | null; node: string | null }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen = NAMES.map((name) => {
      const value = req.headers[name];
      return { name, ours: rawHeader(req.rawHeaders, name), node: value === undefined ? null : String(value) };
    });
    req.resume();
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends one raw HTTP request (repeated headers and odd case are not possible through fetch). */
function send(head: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`${head}\r\n\r\n{}`));
    socket.on("data", () => (socket.destroy(), resolve()));
    socket.on("error", reject);
  });
}

it("reads each header as req.headers does, with repeats kept first or joined like Node", async () => {
  await send([
    "POST /graphql HTTP/1.1",
    "Host: example",
    "AUTHORIZATION: Bearer first",
    "authorization: Bearer second",
    "X-Api-Key: one",
    "x-api-key: two",
    "Accept: application/json",
    "accept: */*",
    "Content-Type: application/json",
    "Content-Type: text/plain",
    "Cookie: a=1",
    "cookie: b=2",
    "Content-Length: 2",
  ].join("\r\n"));
  expect(seen.length).toBe(NAMES.length);
  for (const { name, ours, node } of seen) expect(ours, name).toBe(node);
  expect(seen.find((s) => s.name === "authorization")?.ours).toBe("Bearer first");
});
