// At the connection cap, a socket that is only waiting for its request body (sent at a trickle by a
// client holding any key, even GUEST) can be replaced like an idle one: it cannot lock others out.
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../lib/store/key-store.ts";
import { serve } from "../lib/http/handler.ts";

const ME = JSON.stringify({ query: "{ me { id name } }" });

let store: KeyStore;
let guest: string;
let admin: string;
beforeAll(async () => {
  store = createKeyStore();
  guest = (await store.create({ name: "guest", roles: ["GUEST"], permissions: [] })).key;
  admin = (await store.create({ name: "admin", roles: ["ADMIN"], permissions: [] })).key;
});
afterAll(() => store.dispose?.());

/** Sends a POST's headers announcing a large body, then one byte of body every `everyMs`. */
function trickle(port: number, key: string, everyMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
      );
      const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(" ")), everyMs);
      socket.once("close", () => clearInterval(timer));
      resolve(socket);
    });
    socket.resume();
    socket.on("error", () => {});
    socket.once("error", reject);
  });
}

describe("connection cap against slow bodies", () => {
  it("a keyed client trickling request bodies on every connection cannot lock out a real request", async () => {
    const running = await serve({ store, port: 0, maxConnections: 8, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 16; i++) sockets.push(await trickle(running.port, guest, 100));
      await new Promise((r) => setTimeout(r, 300)); // every one of them is past its headers, waiting on the body
      const response = await fetch(`${running.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${admin}` },
        body: ME,
        signal: AbortSignal.timeout(3_000),
      });
      expect(response.status).toBe(200);
      expect((await response.json()).data.me.name).toBe("admin");
      expect(sockets.filter((s) => !s.destroyed).length).toBeLessThanOrEqual(8);
    } finally {
      for (const s of sockets) s.destroy();
      await running.close();
    }
  });
});
