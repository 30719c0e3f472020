// The store's timestamps (lib/store/_context.ts `iso`) are written from the UTC fields rather than by
// toISOString (which reads the local time zone on first use): the same text for every time.
import { describe, expect, it } from "vitest";
import { iso } from "../../lib/store/_context.ts";

describe("iso", () => {
  it("writes what toISOString writes, at the edges of its four-digit years and anywhere between", () => {
    const yearZero = Date.parse("0000-01-01T00:00:00.000Z");
    const lastFourDigit = Date.parse("9999-12-31T23:59:59.999Z");
    const edges = [0, -1, 1, yearZero, yearZero - 1, lastFourDigit, lastFourDigit + 1, 8.64e15, -8.64e15, 1763870000123, 951782400000];
    for (const ms of edges) expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
    for (let i = 0; i < 20000; i++) {
      const ms = Math.floor((Math.random() * 2 - 1) * 8.64e15 * (i % 2 ? 1 : 0.05));
      expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it("refuses an invalid time as toISOString does", () => {
    expect(() => iso(Number.NaN)).toThrow(RangeError);
    expect(() => iso(8.64e15 + 1)).toThrow(RangeError);
  });
});
