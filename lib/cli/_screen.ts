/**
 * What the interactive prompts draw, as pure functions of their state: the frame of one question,
 * every line at most `columns - 1` display columns (so the terminal never wraps it and a redraw can
 * count lines), and a list window at most `rows` high that scrolls with the cursor. Symbols are
 * plain ASCII on a console without Unicode glyphs (TERM=linux); the cursor row is marked with `>`
 * as well as colour, so it shows with NO_COLOR. Private to lib/cli/_tty-prompt.ts.
 */
import { displayWidth, graphemes, clusterWidth, truncate } from "./width.ts";

export interface Style {
  unicode: boolean;
  color: boolean;
}

/** Unicode symbols unless the terminal is a Linux console (or dumb); colour unless NO_COLOR or dumb. */
export function styleFor(env: Record<string, string | undefined>, isTTY: boolean): Style {
  const term = env.TERM ?? "";
  return {
    unicode: term !== "linux" && term !== "dumb",
    color: isTTY && !("NO_COLOR" in env && env.NO_COLOR !== "") && term !== "dumb",
  };
}

const SGR = { cyan: 36, green: 32, red: 31, yellow: 33, gray: 90, dim: 2, inverse: 7, strike: 9 } as const;
export type Paint = keyof typeof SGR;

export const paint = (style: Style, how: Paint, text: string) =>
  style.color || how === "inverse" ? `\x1b[${SGR[how]}m${text}\x1b[0m` : text;

export function symbols(style: Style) {
  const u = style.unicode;
  return {
    bar: u ? "│" : "|",
    end: u ? "└" : "'",
    active: u ? "◆" : "*",
    done: u ? "◇" : "+",
    cancel: u ? "■" : "x",
    on: u ? "●" : "(*)",
    off: u ? "○" : "( )",
    checked: u ? "◼" : "[x]",
    unchecked: u ? "◻" : "[ ]",
    more: u ? "…" : "...",
  };
}

export type Choice = { value: string; label: string; hint?: string };

/** Splits text into lines of at most `width` columns (hard breaks, by grapheme). */
export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    let current = "";
    let used = 0;
    for (const cluster of graphemes(line)) {
      const w = clusterWidth(cluster);
      if (used + w > width && current) {
        out.push(current);
        current = "";
        used = 0;
      }
      current += cluster;
      used += w;
    }
    out.push(current);
  }
  return out;
}

/**
 * The first item shown so that `cursor` is visible in a window of `size` items, moving the window
 * as little as possible from `top` (the last one drawn).
 */
export function scrollTop(top: number, cursor: number, size: number, count: number): number {
  if (count <= size) return 0;
  if (cursor < top) return cursor;
  if (cursor >= top + size) return cursor - size + 1;
  return Math.min(top, count - size);
}

/** A line of the frame: a coloured prefix of known width and plain text cut to fit. */
export function line(style: Style, columns: number, prefix: string, prefixWidth: number, text: string, how?: Paint): string {
  const room = Math.max(1, columns - 1 - prefixWidth);
  const cut = truncate(text, room, symbols(style).more);
  return prefix + (how ? paint(style, how, cut) : cut);
}

export interface ListState {
  choices: Choice[];
  cursor: number;
  top: number;
  /** Multi-select: the values picked so far; select: undefined. */
  picked?: Set<string>;
}

/**
 * The rows of a list: the window of choices around the cursor plus a line saying how many are
 * above or below it. Returns the rows and the window's new top.
 */
export function listRows(style: Style, columns: number, height: number, state: ListState): { rows: string[]; top: number } {
  const sym = symbols(style);
  const { choices, cursor, picked } = state;
  // The hint of the cursor row (a description cut off in the row) gets a line of its own.
  const hint = choices[cursor]?.hint;
  const room = hint ? height - 1 : height;
  const scrolls = choices.length > room;
  const size = scrolls ? Math.max(1, room - 1) : choices.length;
  const top = scrollTop(state.top, cursor, size, choices.length);
  const bar = paint(style, "cyan", sym.bar);
  const rows = choices.slice(top, top + size).map((choice, i) => {
    const at = top + i === cursor;
    const mark = picked ? (picked.has(choice.value) ? sym.checked : sym.unchecked) : at ? sym.on : sym.off;
    const text = choice.label;
    const lead = `${bar}  ${at ? paint(style, "cyan", ">") : " "} ${paint(style, picked?.has(choice.value) ? "green" : at ? "cyan" : "dim", mark)} `;
    return line(style, columns, lead, 6 + displayWidth(mark), text, at ? undefined : "dim");
  });
  if (hint) rows.push(line(style, columns, `${bar}      `, 7, hint, "dim"));
  if (scrolls) {
    const below = choices.length - top - size;
    const where = `${sym.more} ${top} above, ${below} below (${cursor + 1} of ${choices.length}${picked ? `, ${picked.size} selected` : ""})`;
    rows.push(line(style, columns, `${bar}  `, 3, where, "dim"));
  }
  return { rows, top };
}
