/**
 * The cursors and page sizes of GraphQL `apiKeys(first:, after:)` (the pages are lib/store/paging.ts's).
 * A cursor is the `createdAt` and id of the last key a page returned, in base64url: opaque to clients,
 * and stable while keys are created (a new key sorts after every key there was) or deleted (the next
 * page starts after the cursor's position, whether or not its key is still there).
 */
import { ServiceError } from "./errors.ts";

export const PAGE_MAX = 1000;
/** The page size when `after` is given without `first`. */
export const PAGE_DEFAULT = 100;

type Position = { createdAt: string; id: string };

const toBase64Url = (text: string) => btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/** The cursor that pages on after `key`. @example cursorOf(key) // "MjAyNi0xMS0y..." */
export const cursorOf = (key: Position): string => toBase64Url(`${key.createdAt}|${key.id}`);

/** The position a cursor stands for, or INVALID_INPUT for anything this service did not hand out. */
export function parseCursor(cursor: unknown): Position {
  const invalid = new ServiceError("INVALID_INPUT", "after must be the cursor of a key from an earlier page of apiKeys");
  if (typeof cursor !== "string" || cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid;
  let text: string;
  try {
    text = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw invalid;
  }
  const match = /^([^|]{1,40})\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(text);
  if (!match || Number.isNaN(Date.parse(match[1]))) throw invalid;
  return { createdAt: match[1], id: match[2] };
}

/** `first` checked: a whole number from 1 to 1000. */
export function pageSize(first: unknown, after: unknown): number {
  if (first == null) return after == null ? Infinity : PAGE_DEFAULT;
  if (!Number.isInteger(first) || (first as number) < 1 || (first as number) > PAGE_MAX) {
    throw new ServiceError("INVALID_INPUT", `first is from 1 to ${PAGE_MAX} (got ${String(first)})`);
  }
  return first as number;
}
