/**
 * `apikey --list` as text: an aligned table that fits a terminal, or tab-separated lines on a pipe.
 * The columns are data (LIST_COLUMNS): a new column (expiry, last use) is one entry, appended at the
 * end so scripts that read the pipe format by position keep working.
 */
import { type ApiKeyInfo, permissionPairs } from "../core/model.ts";
import { displayWidth, padEnd, truncate } from "./width.ts";

/** "2025-01-31T12:34:56.789Z" -> "2025-01-31 12:34" (UTC, as stored): the list and the delete screen. */
export const shortTime = (iso: string) => iso.replace("T", " ").slice(0, 16);

interface Column {
  header: string;
  /** The cell on a terminal. */
  cell: (key: ApiKeyInfo) => string;
  /** The field on a pipe (unescaped); defaults to the cell. */
  field?: (key: ApiKeyInfo) => string;
  /** Narrowest the table may cut this column to; absent: never cut. */
  min?: number;
  /** Narrowest it is cut to before any column is cut below its `soft` width; absent: `min`. */
  soft?: number;
}

export const LIST_COLUMNS: readonly Column[] = [
  { header: "NAME", cell: (k) => k.name, min: 6, soft: 12 },
  // Ids are copied, so the id is cut only once the other columns are down to a readable width.
  { header: "ID", cell: (k) => k.id, min: 8, soft: Infinity },
  { header: "ROLES", cell: (k) => k.roles.join(",") || "-", field: (k) => k.roles.join(","), min: 4, soft: 6 },
  {
    header: "PERMISSIONS",
    cell: (k) => permissionPairs(k.permissions).join(",") || "-",
    field: (k) => permissionPairs(k.permissions).join(","),
    min: 4,
    soft: 12,
  },
  { header: "CREATED", cell: (k) => shortTime(k.createdAt), field: (k) => k.createdAt },
  { header: "DESCRIPTION", cell: (k) => k.description ?? "", min: 4, soft: 12 },
];

const GAP = 2;

/** How the list is shown: a table `columns` wide on a terminal, tab-separated lines otherwise. */
export interface ListView {
  tty: boolean;
  columns: number;
}

/** stdout's view: the table on a terminal, `COLUMNS` overriding the width the terminal reports. */
export function stdoutView(env: Record<string, string | undefined> = globalThis.process?.env ?? {}): ListView {
  const out = globalThis.process?.stdout;
  const fromEnv = Number(env.COLUMNS);
  const columns = Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : out?.columns || 80;
  return { tty: Boolean(out?.isTTY), columns };
}

/**
 * Cuts columns until the row fits: always the widest one that may still shrink (in practice the
 * description, then the permissions), one column at a time; first down to their `soft` widths, then
 * (the id included) down to their `min`.
 */
function fit(widths: number[], columns: number): number[] {
  let over = widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1) - columns;
  for (const floor of [(c: Column) => c.soft ?? c.min, (c: Column) => c.min]) {
    while (over > 0) {
      let widest = -1;
      LIST_COLUMNS.forEach((col, i) => {
        const least = floor(col);
        if (least !== undefined && widths[i] > least && (widest < 0 || widths[i] > widths[widest])) widest = i;
      });
      if (widest < 0) break;
      widths[widest] -= 1;
      over -= 1;
    }
  }
  return widths; // still too wide only below about 60 columns: the terminal wraps
}

/** The aligned table, every row at most `columns` wide (as long as the uncut columns fit). */
export function listTable(keys: ApiKeyInfo[], columns: number): string {
  const rows = [LIST_COLUMNS.map((col) => col.header), ...keys.map((key) => LIST_COLUMNS.map((col) => col.cell(key)))];
  const widths = fit(LIST_COLUMNS.map((_, i) => Math.max(...rows.map((row) => displayWidth(row[i])))), columns);
  return rows
    .map((row) => row.map((cell, i) => padEnd(truncate(cell, widths[i]), widths[i])).join(" ".repeat(GAP)).trimEnd())
    .join("\n") + "\n";
}

/** A field on a pipe: backslash, tab, newline and carriage return escaped as \\ \t \n \r. */
const escapeField = (text: string) =>
  text.replace(/[\\\t\n\r]/g, (c) => ({ "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" })[c]!);

/** One line per key, fields separated by a tab, no header: see README "Listing keys". */
export function listLines(keys: ApiKeyInfo[]): string {
  return keys.map((key) => LIST_COLUMNS.map((col) => escapeField((col.field ?? col.cell)(key))).join("\t") + "\n").join("");
}
