/**
 * `apikey --list` as text: an aligned table that fits a terminal, or tab-separated lines on a pipe
 * (lib/cli/table.ts). The table's columns and the pipe's fields are data; fields added to the pipe
 * format go at the end, so scripts that read it by position keep working.
 */
import { type ApiKeyInfo, permissionPairs } from "../core/model.ts";
import { keyState, untilOf } from "../core/lifecycle.ts";
import { formatLabels } from "../core/labels.ts";
import { formatRateLimits } from "../core/rate-limits.ts";
import { formatAllowFrom } from "../core/allow-from.ts";
import { formatCredits } from "../core/credits.ts";
import { type Column, renderLines, renderTable } from "./table.ts";

/** "2025-01-31T12:34:56.789Z" -> "2025-01-31 12:34" (UTC, as stored): the list and the delete screen. */
export const shortTime = (iso: string) => iso.replace("T", " ").slice(0, 16);

export { type KeyState, keyState } from "../core/lifecycle.ts";

/**
 * The EXPIRES cell: "never", the time, "expired", "disabled", or for a replaced key the end of its grace
 * period; a key rotated with a grace period adds when its old secret stops, while it has not.
 */
export function expiryCell(key: ApiKeyInfo, now: number): string {
  const state = keyState(key, now);
  if (state === "expired" || state === "disabled") return state;
  if (state === "grace") {
    const ends = untilOf(key.expiresAt) < untilOf(key.graceUntil) ? key.expiresAt! : key.graceUntil!;
    return `${shortTime(ends)} (grace)`;
  }
  const retiring = key.retiringUntil && untilOf(key.retiringUntil) > now ? ` (old secret ${shortTime(key.retiringUntil)})` : "";
  return (key.expiresAt ? shortTime(key.expiresAt) : "never") + retiring;
}

/**
 * Which of two keys of one name is which: a key replaced with `--overwrite --grace` stays beside its
 * replacement until its grace period ends. " (old)" for such a key, " (new)" for a key sharing its name.
 */
export function twinMarks(keys: readonly ApiKeyInfo[]): Map<ApiKeyInfo, string> {
  const replacedNames = new Set(keys.filter((k) => k.graceUntil).map((k) => k.name));
  const named = new Map<string, number>();
  for (const k of keys) named.set(k.name, (named.get(k.name) ?? 0) + 1);
  const marks = new Map<ApiKeyInfo, string>();
  for (const k of keys) {
    if (replacedNames.has(k.name) && named.get(k.name)! > 1) marks.set(k, k.graceUntil ? " (old)" : " (new)");
  }
  return marks;
}

/**
 * A time column: once the table is too wide, "2026-11-28 16:30" gives up its hour and minute (the date, 10
 * columns) before a column is left out or the others are cut below their readable widths.
 */
const TIME_WIDTHS = { min: 10, soft: 16, shorten: (text: string, width: number) => (width >= 10 && /^\d{4}-\d\d-\d\d /.test(text) ? text.slice(0, 10) : undefined) };
/** A note after an expiry time: " (grace)". */
const NOTE = / \([a-z]+\)$/;

/**
 * The table on a terminal, at the instant `now`. The name is cut last of all (every command takes it),
 * and never below 12 columns while another column can give; `keys` mark a key and its twin.
 */
export function listColumns(now: number, keys: readonly ApiKeyInfo[] = []): Column<ApiKeyInfo>[] {
  const marks = twinMarks(keys);
  return [
    { header: "NAME", cell: (k) => k.name, suffix: (k) => marks.get(k) ?? "", min: 6, soft: 12, keep: true },
    // Ids are copied, so the id is cut only once the other columns are down to a readable width.
    { header: "ID", cell: (k) => k.id, min: 8, last: true },
    { header: "ROLES", cell: (k) => k.roles.join(",") || "-", min: 4, soft: 6 },
    { header: "PERMISSIONS", cell: (k) => permissionPairs(k.permissions).join(",") || "-", min: 4, soft: 12, first: true },
    // Left out at 80 columns when expiry and last use need the room: --json and the pipe keep it.
    { header: "CREATED", cell: (k) => shortTime(k.createdAt), dropOrder: 1, ...TIME_WIDTHS },
    // Times give their hour first (see TIME_WIDTHS) rather than leave the names, roles, permissions and
    // labels no room; a note after the time (" (grace)") is kept whole.
    { header: "EXPIRES", cell: (k) => expiryCell(k, now).replace(NOTE, ""), suffix: (k) => NOTE.exec(expiryCell(k, now))?.[0] ?? "", ...TIME_WIDTHS },
    { header: "LAST USED", cell: (k) => (k.lastUsedAt ? shortTime(k.lastUsedAt) : "never"), ...TIME_WIDTHS },
    // Left out last of all, when the names would be cut below 12 columns otherwise.
    { header: "DESCRIPTION", cell: (k) => k.description ?? "", min: 4, soft: 12, first: true, dropOrder: 2, dropLate: true },
    { header: "LABELS", cell: (k) => formatLabels(k.labels), min: 4, soft: 12, first: true, dropOrder: 2 },
    { header: "RATE LIMITS", cell: (k) => formatRateLimits(k.rateLimits), min: 4, soft: 10, first: true, dropOrder: 2 },
    { header: "CREDITS", cell: (k) => formatCredits(k.credits), min: 4, soft: 10, first: true, dropOrder: 2 },
    { header: "ALLOW FROM", cell: (k) => formatAllowFrom(k.allowFrom), min: 4, soft: 12, first: true, dropOrder: 2 },
  ];
}

/** The pipe format's fields, in their documented order (docs/cli.md, "Listing keys"). */
export function listFields(now: number): ((key: ApiKeyInfo) => string)[] {
  return [
    (k) => k.name,
    (k) => k.id,
    (k) => k.roles.join(","),
    (k) => permissionPairs(k.permissions).join(","),
    (k) => k.createdAt,
    (k) => k.description ?? "",
    (k) => k.expiresAt ?? "",
    (k) => k.lastUsedAt ?? "",
    (k) => k.graceUntil ?? "",
    (k) => keyState(k, now),
    (k) => formatLabels(k.labels),
    (k) => formatRateLimits(k.rateLimits),
    (k) => formatCredits(k.credits),
    (k) => k.retiringUntil ?? "",
    (k) => formatAllowFrom(k.allowFrom),
  ];
}

/** How the list is shown: a table `columns` wide on a terminal, tab-separated lines otherwise. */
export interface ListView {
  tty: boolean;
  columns: number;
  /** The instant keys are judged expired at (ms); defaults to now. */
  now?: number;
}

/** stdout's view: the table on a terminal, `COLUMNS` overriding the width the terminal reports. */
export function stdoutView(env: Record<string, string | undefined> = globalThis.process?.env ?? {}): ListView {
  const out = globalThis.process?.stdout;
  const fromEnv = Number(env.COLUMNS);
  const columns = Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : out?.columns || 80;
  return { tty: Boolean(out?.isTTY), columns };
}

/** The aligned table, every row at most `columns` wide (as long as the uncut columns fit). */
export function listTable(keys: ApiKeyInfo[], columns: number, now = Date.now()): string {
  // The LABELS column (and DESCRIPTION, RATE LIMITS, CREDITS) only when some key has one: the room goes to the rest.
  const labelled = keys.some((key) => key.labels);
  const limited = keys.some((key) => key.rateLimits);
  const capped = keys.some((key) => key.credits);
  const fenced = keys.some((key) => key.allowFrom);
  const described = keys.some((key) => key.description);
  const shown = (header: string) =>
    (header !== "LABELS" || labelled) && (header !== "RATE LIMITS" || limited) && (header !== "CREDITS" || capped) &&
    (header !== "ALLOW FROM" || fenced) && (header !== "DESCRIPTION" || described);
  return renderTable(listColumns(now, keys).filter((column) => shown(column.header)), keys, columns);
}

/** One line per key, fields separated by a tab, no header: see docs/cli.md, "Listing keys". */
export function listLines(keys: ApiKeyInfo[], now = Date.now()): string {
  return renderLines(listFields(now), keys);
}
