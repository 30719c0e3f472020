// One delivery attempt: signed so the reference library verifies it, checked on the address actually
// connected to (a DNS answer cannot slip a private address past the URL check), no redirect followed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { sendWebhook } from "../../lib/http/webhooks/send.ts";
import { testMessage } from "../../lib/store/webhooks/events.ts";
import { newSigningSecret } from "../../lib/core/webhook-signature.ts";

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  servers = [];
});

async function listen(handler: Parameters<typeof createServer>[0]): Promise<{ port: number; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    handler!(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, hits: () => hits };
}

describe("sendWebhook", () => {
  it("signs with every live secret: a receiver holding either one verifies", async () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    const seen: { body: string; headers: Record<string, string> }[] = [];
    const { port } = await listen((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d)).on("end", () => {
        seen.push({ body, headers: req.headers as Record<string, string> });
        res.writeHead(200).end("ok");
      });
    });
    const result = await sendWebhook(`http://127.0.0.1:${port}/`, {}, [a, b], testMessage("wh_x", Date.now()));
    expect(result).toEqual({ ok: true, status: 200 });
    for (const secret of [a, b]) expect(new Webhook(secret).verify(seen[0].body, seen[0].headers)).toMatchObject({ type: "webhook.test" });
    expect(() => new Webhook(newSigningSecret()).verify(seen[0].body, seen[0].headers)).toThrow();
  });

  it("refuses a name whose DNS answer is a private address, before connecting", async () => {
    const { port, hits } = await listen((_, res) => res.writeHead(200).end());
    const rebound = ((_host: string, _o: unknown, cb: (e: null, a: { address: string; family: number }[]) => void) => cb(null, [{ address: "127.0.0.1", family: 4 }])) as never;
    const result = await sendWebhook(`https://hooks.example.com:${port}/`, {}, [newSigningSecret()], testMessage("wh_x", Date.now()), { resolve: rebound });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/resolved to 127\.0\.0\.1, a private address/);
    expect(hits()).toBe(0);
  });

  it("follows no redirect: a 3xx is a failed attempt", async () => {
    const target = await listen((_, res) => res.writeHead(200).end());
    const { port } = await listen((_, res) => res.writeHead(307, { location: `http://127.0.0.1:${target.port}/` }).end());
    const result = await sendWebhook(`http://127.0.0.1:${port}/`, {}, [newSigningSecret()], testMessage("wh_x", Date.now()));
    expect(result).toMatchObject({ ok: false, status: 307 });
    expect(target.hits()).toBe(0);
  });

  it("reads at most a small answer from a receiver that sends without end", async () => {
    const { port } = await listen((_, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => { while (res.write(chunk)); };
      res.on("drain", pump);
      pump();
    });
    const started = Date.now();
    const result = await sendWebhook(`http://127.0.0.1:${port}/`, {}, [newSigningSecret()], testMessage("wh_x", Date.now()));
    expect(result).toEqual({ ok: true, status: 200 });
    expect(Date.now() - started).toBeLessThan(9_000);
  });
});
