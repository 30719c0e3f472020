// The store's one SHA-256 (`sha256Hex`, platform crypto) on known vectors, and the ids a create gives.
import { describe, expect, it } from "vitest";
import { cliWithStore } from "../helpers/cli.ts";
import { sha256Hex } from "../../lib/core/secret.ts";

describe("sha256Hex", () => {
  it("matches the FIPS 180-4 examples", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    expect(sha256Hex("a".repeat(1_000_000))).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("hashes a name as its UTF-8 bytes, and a lone surrogate as U+FFFD (digests from sha256sum)", () => {
    expect(sha256Hex("deploy key")).toBe("2a1419d7d49a021bf07686a4f8011649fdcc132cdd6bbf14e010d0e92ee11dad");
    expect(sha256Hex("é")).toBe("4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c");
    expect(sha256Hex("\ud800")).toBe("83d544ccc223c057d2bf80d3f2a32982c32c3c0db8e2674820da5064783fb097");
  });
});

describe("ids", () => {
  it("a create gives a random (version 4) UUID, a new one each time", async () => {
    const env = cliWithStore();
    try {
      const ids: string[] = [];
      for (const name of ["one", "two", "three"]) {
        const made = await env.cli("apikey", "--create", "--name", name, "--roles", "ADMIN", "--json");
        expect(made.code, made.stderr).toBe(0);
        ids.push(JSON.parse(made.stdout).id);
      }
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      env.cleanup();
    }
  });
});
