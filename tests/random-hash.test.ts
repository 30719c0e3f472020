// The create path's own SHA-256 and random source (lib/core/_sha256.ts, _random.ts), which stand in for
// node:crypto so that a create does not load it: same digests as node:crypto, UUIDs of the same form.
import { hash, randomBytes as nodeRandomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { CLI, tempDir } from "./helpers/cli.ts";
import { sha256Hex, sha256HexHot } from "../lib/core/secret.ts";
import { sha256HexJs } from "../lib/core/_sha256.ts";
import { randomBytes, randomUUID } from "../lib/core/_random.ts";

const node = (text: string) => hash("sha256", text, "hex");

describe("the JavaScript SHA-256", () => {
  it("matches the FIPS 180-4 examples", () => {
    expect(sha256HexJs("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256HexJs("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256HexJs("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    expect(sha256HexJs("a".repeat(1_000_000))).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("gives node:crypto's digest for every length around the block boundaries and for any UTF-16", () => {
    for (let length = 0; length < 300; length++) {
      const ascii = "x".repeat(length);
      expect(sha256HexJs(ascii), `length ${length}`).toBe(node(ascii));
    }
    const units = ["a", "é", "€", "😀", "\ud800", "\udc00", "\u0000", "\uffff", "名"];
    for (let i = 0; i < 2000; i++) {
      const bytes = nodeRandomBytes(1 + (i % 150));
      const text = Array.from(bytes, (b) => (b < 200 ? String.fromCharCode(b) : units[b % units.length])).join("");
      expect(sha256HexJs(text), JSON.stringify(text)).toBe(node(text));
    }
  });

  it("is what sha256Hex gives, and the service's sha256HexHot agrees", () => {
    for (const text of ["sapi_" + "A".repeat(49), "a name", "名前 😀", "\ud83d"]) {
      expect(sha256Hex(text)).toBe(node(text));
      expect(sha256HexHot(text)).toBe(node(text));
    }
  });
});

describe("the random source", () => {
  it("gives UUIDs of crypto.randomUUID()'s form (version 4, RFC variant), all different", () => {
    const ids = Array.from({ length: 2000 }, randomUUID);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gives bytes of every value about equally often, in small and large requests", () => {
    const counts = new Array(256).fill(0);
    for (let i = 0; i < 400; i++) for (const b of randomBytes(1 + (i % 300))) counts[b]++;
    for (const b of randomBytes(100_000)) counts[b]++;
    const total = counts.reduce((a, b) => a + b, 0);
    for (const count of counts) expect(Math.abs(count - total / 256)).toBeLessThan((total / 256) * 0.2);
  });

  /** Two creates by the built CLI, in a fresh store, with `mount` run first in a private mount namespace. */
  const createsWith = (mount: string, node: string[] = []) => {
    const tmp = tempDir();
    const create = (name: string) =>
      `${process.execPath} ${node.join(" ")} ${CLI} apikey --create --name ${name} --roles ADMIN --json --store ${tmp.dir}/keys`;
    const run = spawnSync("unshare", ["--mount", "sh", "-c", `${mount} && ${create("one")} && ${create("two")}`], { encoding: "utf8" });
    tmp.cleanup();
    expect(run.status, run.stderr).toBe(0);
    return run.stdout.trim().split("\n").map((line) => JSON.parse(line) as { key: string; id: string });
  };
  const distinct = (made: { key: string; id: string }[]) => {
    expect(made).toHaveLength(2);
    expect(made[0].key).not.toBe(made[1].key);
    expect(made[0].id).not.toBe(made[1].id);
    for (const { key } of made) expect(key).not.toMatch(/^sapi_0{20}/);
  };

  it.skipIf(process.getuid?.() !== 0)("trusts only the kernel's generator at /dev/random: /dev/zero mounted over it gives no zero secret (root: mount namespace)", () => {
    distinct(createsWith("mount --bind /dev/zero /dev/random"));
    distinct(createsWith("mount --bind /dev/null /dev/random"));
  });

  it.skipIf(process.getuid?.() !== 0)("without the device and without the Web Crypto global, node:crypto gives the bytes (root: mount namespace)", () => {
    distinct(createsWith("mount --bind /dev/zero /dev/random", ["--no-experimental-global-webcrypto"]));
  });
});
