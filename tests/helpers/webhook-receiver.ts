// A webhook receiver on a free loopback port that verifies every request with the reference library of
// the Standard Webhooks specification (`standardwebhooks`), as a user's receiver would.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  id: string;
  type: string;
  data: Record<string, unknown>;
  body: string;
  headers: Record<string, string>;
  /** Whether the signature verified under the secret given to `receiver.secret`. */
  verified: boolean;
}

export interface Receiver {
  url: string;
  /** What to answer: 204, an HTTP status for a failure, or "hang" (never answer). */
  mode: number | "hang";
  /** The signing secret the receiver verifies with. */
  secret?: string;
  /** Every request, in arrival order, retries included. */
  requests: Received[];
  /** Requests answered 2xx, deduplicated by webhook-id as a receiver should. */
  delivered(): Received[];
  waitFor(check: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const accepted = new Map<string, Received>();
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: "",
    mode: 204,
    requests: [],
    delivered: () => [...accepted.values()],
    async waitFor(check, what, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(receiver.requests.map((r) => [r.type, r.id]))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => {
      for (const response of hanging) response.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = "";
    request.setEncoding("utf8").on("data", (d) => (body += d)).on("end", () => {
      let verified = false;
      try {
        new Webhook(receiver.secret!).verify(body, request.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      const headers = request.headers as Record<string, string>;
      const got: Received = { id: String(headers["webhook-id"]), type: parsed.type, data: parsed.data, body, headers, verified };
      receiver.requests.push(got);
      if (receiver.mode === "hang") return void hanging.add(response);
      if (receiver.mode < 300 && !accepted.has(got.id)) accepted.set(got.id, got);
      response.writeHead(receiver.mode).end();
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}
