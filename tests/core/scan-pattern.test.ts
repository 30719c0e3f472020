// The regular expression docs/secret-scanning.md gives other scanners, the checksum that keeps random text
// from being reported, and the chunked reader that finds a secret wherever the chunks happen to split it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generateSecret, isWellFormedSecret } from "../../lib/core/secret.ts";
import { maskToken, TOKEN_REGEX_SOURCE, tokenAt } from "../../lib/core/scan-pattern.ts";
import { type Found, scanSource } from "../../lib/cli/scan-source.ts";
import { ROOT } from "../helpers/cli.ts";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const bytes = (text: string) => new TextEncoder().encode(text);

/** Finds secrets in `text` handed to the scanner `piece` bytes at a time. */
async function findIn(text: string | Uint8Array, piece: number, countLines = true): Promise<Found[]> {
  const data = typeof text === "string" ? bytes(text) : text;
  let at = 0;
  const found: Found[] = [];
  await scanSource(async (buffer, offset, length) => {
    const n = Math.min(length, piece, data.length - at);
    buffer.set(data.subarray(at, at + n), offset);
    at += n;
    return n;
  }, { countLines, onFound: (f) => void found.push(f) });
  return found;
}

describe("the documented pattern", () => {
  const regex = new RegExp(TOKEN_REGEX_SOURCE, "g");

  it("matches 1,000 generated secrets, and each passes the checksum", () => {
    for (let i = 0; i < 1000; i++) {
      const secret = generateSecret();
      expect(`token: ${secret}\n`.match(regex)).toEqual([secret]);
      expect(tokenAt(bytes(secret), 0, 54)?.secret).toBe(secret);
    }
  });

  it("lets none of 1,000 strings of the same shape with a wrong checksum through", () => {
    for (let i = 0; i < 1000; i++) {
      const secret = generateSecret();
      // Change one checksum character, or one body character: the shape stays, the checksum no longer fits.
      const at = 5 + (i % 49);
      const other = ALPHABET[(ALPHABET.indexOf(secret[at]) + 1 + (i % 61)) % 62];
      const forged = secret.slice(0, at) + other + secret.slice(at + 1);
      expect(forged).toMatch(regex);
      expect(isWellFormedSecret(forged)).toBe(false);
      expect(tokenAt(bytes(forged), 0, 54)).toBeNull();
    }
  });

  it("is the expression docs/secret-scanning.md gives, in every rule there", () => {
    const doc = readFileSync(join(ROOT, "docs/secret-scanning.md"), "utf8");
    expect(doc).toContain(TOKEN_REGEX_SOURCE);
    expect(doc.split(TOKEN_REGEX_SOURCE).length - 1).toBeGreaterThanOrEqual(4); // the regex, gitleaks, trufflehog, GitHub
  });

  it("is masked to its prefix, two characters and the last three", () => {
    const secret = generateSecret();
    expect(maskToken(secret)).toBe(`${secret.slice(0, 7)}…${secret.slice(-3)}`);
  });
});

describe("the scanner", () => {
  it("finds a secret split at every possible chunk boundary, once, at the right line and column", async () => {
    const secret = generateSecret();
    const text = `line one\n  é key = "${secret}" end\nlast`;
    for (const piece of [1, 2, 3, 7, 13, 54, 300]) {
      const found = await findIn(text, piece);
      expect(found.map((f) => [f.secret, f.place])).toEqual([[secret, { line: 2, column: 12 }]]);
    }
  });

  it("finds a secret across a 1 MiB read", async () => {
    const secret = generateSecret();
    const pad = "x".repeat(99) + "\n";
    const text = pad.repeat(10485) + "y".repeat(56) + secret + "\n"; // from 20 bytes before the end of the first read
    const found = await findIn(text, 1 << 20);
    expect(found.map((f) => [f.secret, f.offset, f.place])).toEqual([[secret, (1 << 20) - 20, { line: 10486, column: 57 }]]);
  });

  it("reads a secret split over lines or by invisible characters, and says so", async () => {
    const secret = generateSecret();
    const cases = [
      `"${secret.slice(0, 30)}" +\n  "${secret.slice(30)}"`,
      `${secret.slice(0, 20)}\\\n${secret.slice(20)}`,
      `+${secret.slice(0, 40)}\r\n+${secret.slice(40)}`,
      `${secret.slice(0, 10)}\u200b${secret.slice(10, 30)}\u2060${secret.slice(30)}`,
      `${secret.slice(0, 25)}\u00ad${secret.slice(25)}`,
    ];
    for (const text of cases) {
      const found = await findIn(text, 5);
      expect(found.map((f) => [f.secret, f.split])).toEqual([[secret, true]]);
    }
  });

  it("does not take look-alikes or random text for secrets", async () => {
    const secret = generateSecret();
    const random = Array.from({ length: 2000 }, (_, i) => "sapi_" + Array.from({ length: 49 }, (_, j) => ALPHABET[(i * 7 + j * j * 13) % 62]).join(""));
    const lookAlikes = [
      secret.replace("s", "\u0455"), // Cyrillic dze
      secret.replace("sapi_", "ｓａｐｉ＿"), // full-width
      secret.slice(0, 20) + "\u0430" + secret.slice(21), // a Cyrillic a in the body
      secret.slice(0, 30) + " " + secret.slice(30), // a blank without a line break
    ];
    expect(await findIn([...random, ...lookAlikes, "sapi_ is our prefix"].join("\n"), 4096)).toEqual([]);
    for (const text of lookAlikes) expect(isWellFormedSecret(text)).toBe(false); // nor would the service take them
  });
});
