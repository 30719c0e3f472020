/**
 * Tables for people and lines for scripts, shared by `apikey --list` and `apikey --audit`: an aligned
 * table that fits the terminal (cut with "…", widest column first, widths in display columns), or on
 * a pipe one tab-separated line per row. Columns are data: each says how wide it may be cut, and
 * whether it may be left out of the table when cutting alone cannot make a row fit.
 */
import { displayWidth, padEnd, truncate } from "./width.ts";

export interface Column<T> {
  header: string;
  /** The cell on a terminal (escaped by the table: see `terminalText`). */
  cell: (row: T) => string;
  /** Narrowest the table may cut this column to; absent: never cut. */
  min?: number;
  /** Narrowest it is cut to before any column is cut below its `soft` width; absent: `min`. */
  soft?: number;
  /** Cut to `min` only once every other column is down to its `soft` width (the id: it is copied). */
  last?: boolean;
  /** Cut to `min` before the others go below their `soft` widths (the description, the permissions). */
  first?: boolean;
  /**
   * Cut only once every other column is down to its `min`, and then to `soft` before `min` (the name:
   * every command takes it, so it stays readable while anything else can give).
   */
  keep?: boolean;
  /** The cell in `width` columns, instead of cutting it with "…" (a time without its hour); undefined: cut it. */
  shorten?: (text: string, width: number) => string | undefined;
  /** Text after the cell that cutting never removes (the cell itself is cut instead): " (old)". */
  suffix?: (row: T) => string;
  /** Left out of the table (not of the pipe format) when the row cannot fit otherwise, lowest first. */
  dropOrder?: number;
  /** With `dropOrder`: left out only when the `keep` columns would be cut below their `soft` widths otherwise. */
  dropLate?: boolean;
}

const GAP = 2;

// Controls, bidi overrides and isolates, and line and paragraph separators: what the input rules refuse
// in a description. Zero-width joiners stay, so emoji sequences still show as one picture.
const UNSAFE = /[\p{Cc}\u202A-\u202E\u2066-\u2069\u2028\u2029]/gu;

/**
 * Text from the store made safe to print on a terminal: a control, bidi-override or line-breaking
 * character is written as a visible `\u{…}` escape instead of acting on the terminal.
 * @example terminalText("evil\u001b[2J") // "evil\\u{1b}[2J"
 */
export const terminalText = (text: string): string =>
  text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);

/**
 * A field on a pipe: backslash, tab, newline and carriage return written as \\ \t \n \r, and any other
 * control, bidi-override or separator character as \u{…}, so one row stays one line whatever a store holds.
 */
export const escapeField = (text: string): string =>
  terminalText(text.replace(/[\\\t\n\r]/g, (c) => ({ "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" })[c]!));

/**
 * Cuts columns until the row fits: always the widest one that may still shrink (ties: the rightmost,
 * so the description goes before the permissions), first down to their `soft` widths, then the `last`
 * ones (the id) down to their `min`, then the `first` ones (description, permissions), then all of
 * them, and only then the `keep` ones (the name), to `soft` and at last to `min`. Returns "early" when
 * the row would still need cutting below the soft widths and a droppable column could make room
 * instead, "late" when only the names would still be cut below theirs and a `dropLate` one could.
 */
function fit<T>(columns: readonly Column<T>[], widths: number[], room: number, drops: { early: boolean; late: boolean }, suffixes: number[]): number[] | "early" | "late" {
  let over = widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1) - room;
  const soft = (c: Column<T>) => c.soft ?? c.min;
  const floors: ((c: Column<T>) => number | undefined)[] = [
    (c) => (c.keep || c.last ? undefined : soft(c)),
    (c) => (c.keep ? undefined : c.last ? c.min : soft(c)),
    (c) => (c.keep ? undefined : c.last || c.first ? c.min : soft(c)),
    (c) => (c.keep ? undefined : c.min),
    (c) => (c.keep ? soft(c) : undefined),
    (c) => (c.keep ? c.min : undefined),
  ];
  for (const [pass, floor] of floors.entries()) {
    if (pass === 2 && over > 0 && drops.early) return "early";
    if (pass === 3 && over > 0 && drops.late) return "late";
    while (over > 0) {
      let widest = -1;
      columns.forEach((col, i) => {
        const least = floor(col) === undefined ? undefined : floor(col)! + suffixes[i]; // widths count the text, not its suffix
        if (least !== undefined && widths[i] > least && (widest < 0 || widths[i] >= widths[widest])) widest = i;
      });
      if (widest < 0) break;
      widths[widest] -= 1;
      over -= 1;
    }
  }
  return widths; // still too wide only on very narrow terminals: the terminal wraps
}

/**
 * The aligned table, every row at most `room` columns wide as long as the uncut columns fit; a column
 * with a `dropOrder` is left out, lowest first, rather than cutting the others below their soft widths.
 */
export function renderTable<T>(all: readonly Column<T>[], rows: readonly T[], room: number): string {
  let columns = [...all];
  // Each cell as [text, suffix]: the suffix stays whole when the cell is cut.
  const cells = (cols: readonly Column<T>[]): [string, string][][] => [
    cols.map((c) => [c.header, ""]),
    ...rows.map((row) => cols.map((c): [string, string] => [terminalText(c.cell(row)), terminalText(c.suffix?.(row) ?? "")])),
  ];
  const cut = ([text, suffix]: [string, string], width: number, column: Column<T> | undefined) => {
    const room = Math.max(0, width - displayWidth(suffix));
    const shortened = displayWidth(text) > room ? column?.shorten?.(text, room) : undefined;
    return padEnd((shortened ?? truncate(text, room)) + suffix, width);
  };
  for (;;) {
    const table = cells(columns);
    const droppable = columns.filter((c) => c.dropOrder !== undefined).sort((a, b) => a.dropOrder! - b.dropOrder!);
    const early = droppable.filter((c) => !c.dropLate);
    const widest = columns.map((_, i) => Math.max(...table.map((r) => displayWidth(r[i][0] + r[i][1]))));
    const suffixes = columns.map((_, i) => Math.max(...table.map((r) => displayWidth(r[i][1]))));
    const widths = fit(columns, widest, room, { early: early.length > 0, late: droppable.length > 0 }, suffixes);
    if (typeof widths === "string") {
      const gone = widths === "early" ? early[0] : droppable[0];
      columns = columns.filter((c) => c !== gone);
      continue;
    }
    return table
      .map((r, n) => r.map((cell, i) => cut(cell, widths[i], n === 0 ? undefined : columns[i])).join(" ".repeat(GAP)).trimEnd())
      .join("\n") + "\n";
  }
}

/** One line per row, fields separated by a tab, no header; fields escaped (`escapeField`). */
export function renderLines<T>(fields: readonly ((row: T) => string)[], rows: readonly T[]): string {
  return rows.map((row) => fields.map((field) => escapeField(field(row))).join("\t") + "\n").join("");
}
