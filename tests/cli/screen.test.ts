// The prompt's drawing as pure functions: rows never wider than the terminal, a list window that
// follows the cursor, a visible cursor mark without colour, ASCII on a Linux console.
import { describe, expect, it } from "vitest";
import { listRows, scrollTop, styleFor, wrap } from "../../lib/cli/_screen.ts";
import { displayWidth } from "../../lib/cli/width.ts";

const choices = Array.from({ length: 30 }, (_, i) => ({ value: `k${i}`, label: `key ${i} ${"long text ".repeat(12)}` }));
const noColor = styleFor({ NO_COLOR: "1", TERM: "xterm" }, true);
const linux = styleFor({ TERM: "linux" }, true);

describe("prompt screen", () => {
  it("chooses ASCII for TERM=linux and no colour for NO_COLOR", () => {
    expect(linux).toEqual({ unicode: false, color: true });
    expect(noColor).toEqual({ unicode: true, color: false });
    expect(styleFor({}, false).color).toBe(false);
  });

  it("scrolls the window as little as needed to show the cursor", () => {
    expect(scrollTop(0, 5, 10, 30)).toBe(0);
    expect(scrollTop(0, 12, 10, 30)).toBe(3);
    expect(scrollTop(3, 2, 10, 30)).toBe(2);
    expect(scrollTop(25, 29, 10, 30)).toBe(20);
    expect(scrollTop(7, 7, 10, 5)).toBe(0);
  });

  it("draws at most `height` rows, none wider than the terminal, the cursor row marked with >", () => {
    for (const style of [noColor, linux]) {
      const drawn = listRows(style, 80, 18, { choices, cursor: 22, top: 0, picked: new Set(["k22", "k1"]) });
      const rows = drawn.rows.map((row) => row.replace(/\x1b\[[0-9;]*m/g, ""));
      const { top } = drawn;
      expect(rows.length).toBe(18);
      expect(top).toBe(22 - 17 + 1);
      for (const row of rows) expect(displayWidth(row)).toBeLessThan(80);
      expect(rows.filter((row) => /^\S\s+>/.test(row))).toEqual([expect.stringContaining("key 22 ")]);
      expect(rows.at(-1)).toMatch(/6 above, 7 below \(23 of 30, 2 selected\)/);
      if (style === linux) for (const row of rows) expect(row).toMatch(/^[\x20-\x7e]*$/);
    }
  });

  it("wraps long questions by display width", () => {
    expect(wrap("日本語".repeat(5), 20).map(displayWidth)).toEqual([20, 10]);
    expect(wrap("a\nb", 10)).toEqual(["a", "b"]);
  });
});
