import { describe, expect, it } from "vitest";
import { generateSecret, isWellFormedSecret, SECRET_PREFIX, sha256Hex } from "../../lib/core/secret.ts";

describe("secrets", () => {
  it("have the prefix, 49 base62 characters, and are all different", () => {
    const secrets = Array.from({ length: 1000 }, generateSecret);
    for (const secret of secrets) expect(secret).toMatch(/^sapi_[0-9A-Za-z]{49}$/);
    expect(new Set(secrets).size).toBe(1000);
  });

  it("use every base62 character about equally often (no modulo bias)", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      for (const ch of generateSecret().slice(SECRET_PREFIX.length, SECRET_PREFIX.length + 43)) {
        counts.set(ch, (counts.get(ch) ?? 0) + 1);
      }
    }
    expect(counts.size).toBe(62);
    const expected = (2000 * 43) / 62; // about 1387 each
    for (const count of counts.values()) expect(Math.abs(count - expected)).toBeLessThan(expected * 0.15);
  });

  it("are recognised as well-formed, and a changed character breaks the checksum", () => {
    const secret = generateSecret();
    expect(isWellFormedSecret(secret)).toBe(true);
    const i = 20;
    const flipped = secret.slice(0, i) + (secret[i] === "a" ? "b" : "a") + secret.slice(i + 1);
    expect(isWellFormedSecret(flipped)).toBe(false);
    expect(isWellFormedSecret(secret.slice(0, -1))).toBe(false);
    expect(isWellFormedSecret("xapi_" + secret.slice(5))).toBe(false);
    expect(isWellFormedSecret("")).toBe(false);
  });

  it("hash to SHA-256 hex", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});
