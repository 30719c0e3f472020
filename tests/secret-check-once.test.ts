// A request's secret is checked (prefix, length, checksum) once on the way to an answer: by the store's
// `verify`, which refuses a malformed secret itself without reading the store. The handler asks again
// only for a refused key, to tell "malformed" from unknown or expired; the answers stay as they were.
import { beforeEach, describe, expect, it, vi } from "vitest";
import * as secret from "../lib/core/secret.ts";
import { createHandler } from "../lib/http/fetch.ts";
import { createKeyStore } from "../lib/store/key-store.ts";

vi.mock("../lib/core/secret.ts", async (original) => {
  const real = await original<typeof import("../lib/core/secret.ts")>();
  return { ...real, isWellFormedSecret: vi.fn(real.isWellFormedSecret) };
});
const checks = vi.mocked(secret.isWellFormedSecret);

const ask = (handler: ReturnType<typeof createHandler>, key?: string) =>
  handler(new Request("http://x/graphql", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query: "{ me { id name } }" }),
  }));

describe("the secret check", () => {
  beforeEach(() => void checks.mockClear());

  it("runs once per authenticated request, remembered or not", async () => {
    const store = createKeyStore();
    const { key } = await store.create({ name: "once", roles: ["VIEWER"], permissions: [] });
    const handler = createHandler({ store });
    for (let i = 0; i < 3; i++) {
      checks.mockClear();
      const response = await ask(handler, key);
      expect(response.status).toBe(200);
      expect(checks.mock.calls.filter(([s]) => s === key)).toHaveLength(1);
    }
  });

  it("still tells malformed from unknown, with the same statuses and messages, and a malformed secret reads no store", async () => {
    const store = createKeyStore();
    const { key } = await store.create({ name: "gone", roles: ["VIEWER"], permissions: [] });
    await store.deleteById((await store.verify(key))!.id);
    const refusal = vi.spyOn(store, "refusal");
    const handler = createHandler({ store });

    const typo = key.slice(0, -1) + (key.endsWith("A") ? "B" : "A"); // the checksum no longer matches
    for (const malformed of [typo, "sapi_not-a-real-key"]) {
      const response = await ask(handler, malformed);
      expect(response.status).toBe(401);
      expect((await response.json()).errors[0]).toMatchObject({
        message: "Malformed API key: it should start with 'sapi_' and be copied completely",
        extensions: { code: "UNAUTHENTICATED" },
      });
      expect(await store.verify(malformed)).toBeNull(); // the library refuses it by itself
    }
    expect(refusal).not.toHaveBeenCalled();

    const unknown = await ask(handler, key);
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).errors[0].message).toBe("Invalid or revoked API key");
    expect(refusal).toHaveBeenCalledTimes(1);
  });
});
