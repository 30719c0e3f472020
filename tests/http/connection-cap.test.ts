// At the connection cap, a socket that is only waiting for its request body (sent at a trickle by a
// client holding any key, even GUEST) can be replaced like an idle one: it cannot lock others out.
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyStore, type KeyStore } from "../../lib/store/key-store.ts";
import { serve } from "../../lib/http/serve.ts";

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
      // Every one of them is past its headers and past the first second of its body, far below 16 KiB/s.
      await new Promise((r) => setTimeout(r, 1_300));
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

  it("a body arriving steadily (64 KiB/s) is not the one replaced while new connections pour in", async () => {
    const running = await serve({
      store, port: 0, maxConnections: 4, maxBodyBytes: 400_000, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000,
    });
    const flood: Socket[] = [];
    try {
      const body = `{"query":"{ me { name } }"${" ".repeat(200_000)}}`;
      const socket = connect(running.port, "127.0.0.1");
      await new Promise((r) => socket.once("connect", r));
      let answer = "";
      socket.setEncoding("utf8").on("data", (d) => (answer += d));
      socket.on("error", () => {});
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      );
      const upload = (async () => {
        for (let at = 0; at < body.length; at += 8_192) {
          socket.write(body.slice(at, at + 8_192));
          await new Promise((r) => setTimeout(r, 125));
        }
      })();
      const pour = (async () => {
        for (let i = 0; i < 30; i++) {
          const s = connect(running.port, "127.0.0.1");
          s.on("error", () => {});
          flood.push(s);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await Promise.all([upload, pour]);
      const deadline = Date.now() + 5_000;
      while (!answer.includes("\r\n\r\n{") && !socket.destroyed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 100));
      expect(answer, answer.slice(0, 300)).toMatch(/^HTTP\/1\.1 200/);
      expect(answer).toContain('"name":"admin"');
    } finally {
      for (const s of flood) s.destroy();
      await running.close();
    }
  });
});
