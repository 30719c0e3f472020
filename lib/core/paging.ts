/**
 * Pages of keys in the order `list` gives them (oldest first, then by id), for GraphQL
 * `apiKeys(first:, after:)`. A cursor is the `createdAt` and id of the last key a page returned, in
 * base64url: opaque to clients, and stable while keys are created (a new key sorts after every key
 * there was) or deleted (the next page starts after the cursor, wherever the key it came from went).
 * A page reads every key once, keeping only `first` of them: memory is bounded by the page size.
 */
import { ServiceError } from "./errors.ts";
import type { ApiKeyInfo } from "./model.ts";
import type { KeyFilter } from "./filter.ts";

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
  const match = /^([^|]{1,40})\|([0-9a-f-]{36})$/.exec(text);
  if (!match) throw invalid;
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

const before = (a: Position, b: Position) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);
const order = (a: Position, b: Position) => (before(a, b) ? -1 : before(b, a) ? 1 : 0);

/**
 * The `first` keys after `after` that `matches` keeps, oldest first, read from `pages` (a store's
 * `listPages`) in one pass holding at most twice `first` of them.
 */
export async function pageOf(
  pages: AsyncIterable<ApiKeyInfo[]>,
  query: { first: number; after?: Position; matches?: KeyFilter },
  now: number,
): Promise<ApiKeyInfo[]> {
  const { first, after, matches } = query;
  let kept: ApiKeyInfo[] = [];
  for await (const page of pages) {
    for (const key of page) {
      if (after && !before(after, key)) continue;
      if (matches && !matches(key, now)) continue;
      kept.push(key);
    }
    if (kept.length > 2 * first) kept = kept.sort(order).slice(0, first);
  }
  return kept.sort(order).slice(0, first);
}
