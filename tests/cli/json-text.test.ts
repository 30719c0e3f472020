// jsonLine skips the Unicode pattern for text of printable ASCII alone (so a create never builds it):
// the same output as escaping every string, for any text.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { jsonLine } from "../../lib/cli/json-text.ts";

const escapeAll = (value: unknown) =>
  JSON.stringify(value).replace(/[\p{C}\p{Zl}\p{Zp}]/gu, (c) => Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join("")) + "\n";

describe("jsonLine", () => {
  it("writes what escaping every unsafe character gives, printable ASCII or not", () => {
    const units = ["a", " ", "~", "\x7f", "\x1b", "\u0085", "\u2028", "\u2029", "\u202e", "\u200b", "\ud800", "😀", "é", "\ue000", "\u0378"];
    for (let i = 0; i < 3000; i++) {
      const text = Array.from(randomBytes(1 + (i % 40)), (b) => (b < 128 ? String.fromCharCode(b) : units[b % units.length])).join("");
      const value = { key: "sapi_x", name: text, list: [text, 1, null] };
      expect(jsonLine(value), JSON.stringify(text)).toBe(escapeAll(value));
    }
    expect(jsonLine({ name: "plain\x7f" })).toBe('{"name":"plain\\u007f"}\n');
    expect(jsonLine({ name: "plain ascii" })).toBe('{"name":"plain ascii"}\n');
  });
});
