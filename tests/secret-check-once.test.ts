// A request's secret is checked (prefix, length, checksum) by the handler, so a malformed key never
// reaches the store, and again by `verify`, which must refuse one by itself: the checksum is computed
// once for both. The answers stay as they were.
import { describe, expect, it } from "vitest";
import { generateSecret, isWellFormedSecret, secretChecks } from "../lib/core/secret.ts";
import { createHandler } from "../lib/http/fetch.ts";
import { createKeyStore } from "../lib/store/key-store.ts";

const ask = (handler: ReturnType<typeof createHandler>, key?: string) =>
  handler(new Request("http://x/graphql", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query: "{ me { id name } }" }),
  }));

describe("the secret check", () => {
  it("computes one checksum per authenticated request, remembered answer or not", async () => {
    const store = createKeyStore();
    const { key } = await store.create({ name: "once", roles: ["VIEWER"], permissions: [] });
    const handler = createHandler({ store });
    for (let i = 0; i < 3; i++) {
      const before = secretChecks.computed;
      expect((await ask(handler, key)).status).toBe(200);
      expect(secretChecks.computed - before).toBe(1);
    }
  });

  it("answers as a fresh check would, whatever came before", () => {
    const good = generateSecret();
    const other = generateSecret();
    const typo = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    const sequence = [good, good, good, typo, good, other, good, "sapi_short", good, typo, typo, other, other, other, "", good];
    const fresh = (s: string) => /^sapi_[0-9A-Za-z]{49}$/.test(s) && s !== typo;
    for (const s of sequence) expect(isWellFormedSecret(s), s).toBe(fresh(s));
    // A second check of the same secret is remembered only once: a third computes again.
    isWellFormedSecret("x"); // forgets
    const before = secretChecks.computed;
    expect(isWellFormedSecret(good)).toBe(true);
    expect(secretChecks.computed).toBe(before + 1);
    expect(isWellFormedSecret(good)).toBe(true);
    expect(secretChecks.computed).toBe(before + 1);
    expect(isWellFormedSecret(good)).toBe(true);
    expect(secretChecks.computed).toBe(before + 2);
  });

  it("still tells malformed from unknown, with the same statuses and messages", async () => {
    const store = createKeyStore();
    const { key } = await store.create({ name: "gone", roles: ["VIEWER"], permissions: [] });
    await store.deleteById((await store.verify(key))!.id);
    const handler = createHandler({ store });
    const typo = key.slice(0, -1) + (key.endsWith("A") ? "B" : "A");
    for (const malformed of [typo, "sapi_not-a-real-key"]) {
      const response = await ask(handler, malformed);
      expect(response.status).toBe(401);
      expect((await response.json()).errors[0]).toMatchObject({
        message: "Malformed API key: it should start with 'sapi_' and be copied completely",
        extensions: { code: "UNAUTHENTICATED" },
      });
      expect(await store.verify(malformed)).toBeNull(); // the library refuses it by itself
    }
    const unknown = await ask(handler, key);
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).errors[0].message).toBe("Invalid or revoked API key");
  });
});
