/**
 * `apikey --list` on a pipe and with `--json`, streamed: written a chunk of keys at a time as they are
 * read, so that 100,000 keys list in about as much memory as 100. The order stays the table's (oldest
 * first): a first pass over the store (`listPages`) keeps only each matching key's creation time and id,
 * 24 bytes a key, and a second reads the keys in that order, 256 at a time, and writes them.
 * On a terminal the table needs every row for its widths: it is built whole, as before (lib/cli/format.ts).
 */
import type { ApiKeyInfo } from "../core/model.ts";
import { KeyIndex } from "../core/_key-index.ts";
import type { KeyFilter } from "../core/filter.ts";
import type { KeyStore } from "../store/key-store.ts";
import type { Output } from "./format-results.ts";
import { listFields } from "./list.ts";
import { renderLines } from "./table.ts";
import { jsonLine } from "./json-text.ts";
import { formatList } from "./format.ts";
import { parseFilter } from "../core/filter.ts";
import { stdoutView } from "./list.ts";
import type { CliBackend } from "./command.ts";

const CHUNK = 256;

/** What streaming needs of a store: its pages and a read by id (the local store has both). */
export type PagedStore = Pick<KeyStore, "listPages" | "get">;

export const canStream = (store: object): store is PagedStore => "listPages" in store && "get" in store;

/**
 * Writes the keys `matches` keeps, at most `limit`, oldest first, as tab-separated lines or as the
 * `{"keys":[...]}` of `--json`, through `write`. A reader that leaves (`| head -1`) ends it with exit 0.
 */
export async function streamList(
  store: PagedStore,
  query: { asJson: boolean; matches?: KeyFilter; limit?: number; where?: string },
  write: (fd: 1, text: string) => string | undefined,
): Promise<Output> {
  const now = Date.now();
  const { asJson, matches, limit = Infinity } = query;
  const index = new KeyIndex(true);
  let stored = 0;
  for await (const page of store.listPages()) {
    stored += page.length;
    for (const key of page) if (!matches || matches(key, now)) index.add(key);
  }
  const fields = listFields(now);
  let written = 0;
  for (let at = 0; at < index.size && written < limit; at += CHUNK) {
    const ids = Array.from({ length: Math.min(CHUNK, index.size - at) }, (_, i) => index.idAt(at + i));
    // A key deleted, or changed to no longer match, between the passes is left out.
    const keys = (await Promise.all(ids.map((id) => store.get(id))))
      .filter((key): key is ApiKeyInfo => key !== null && (!matches || matches(key, now)))
      .slice(0, limit - written);
    if (!keys.length) continue;
    const text = asJson ? keys.map((key, i) => (written + i ? "," : '{"keys":[') + jsonLine(key).slice(0, -1)).join("") : renderLines(fields, keys);
    written += keys.length;
    const failed = write(1, text);
    if (failed) return stopped(failed);
  }
  if (asJson) {
    const failed = write(1, written ? "]}\n" : '{"keys":[]}\n');
    return failed ? stopped(failed) : { exitCode: 0, readerMayLeave: true };
  }
  if (written) return { exitCode: 0, readerMayLeave: true };
  if (matches && stored > 0) return { notice: noMatch(stored, query.where), exitCode: 0 };
  return { notice: query.where ? `No API keys stored in ${query.where}` : "No API keys stored", exitCode: 0, readerMayLeave: true };
}

/**
 * `apikey --list [--filter] [--limit] [--json]`: streamed on a pipe and as JSON when the store pages and
 * `write` is given; otherwise (a terminal's table, a remote store) the whole list, formatted at once.
 */
export async function listKeys(
  flags: { filter?: string },
  store: CliBackend,
  query: { asJson: boolean; limit?: number; where?: string },
  write?: (fd: 1, text: string) => string | undefined,
): Promise<Output> {
  const matches = flags.filter === undefined ? undefined : parseFilter(String(flags.filter));
  const view = stdoutView();
  if (write && (query.asJson || !view.tty) && canStream(store)) return await streamList(store, { ...query, matches }, write);
  const now = Date.now();
  const stored = await store.list();
  const keys = stored.filter((key) => !matches || matches(key, now)).slice(0, query.limit);
  if (matches && keys.length === 0 && stored.length > 0 && !query.asJson) return { notice: noMatch(stored.length, query.where), exitCode: 0 };
  return { ...formatList(keys, query.asJson, view, query.where), readerMayLeave: true };
}

/** A filter that matched nothing in a store that has keys: said so, not "no keys stored". */
const noMatch = (stored: number, where?: string) =>
  `No API key matches the filter (${stored} key${stored === 1 ? "" : "s"} stored${where ? ` in ${where}` : ""})`;

/** A reader that went away had what it wanted; any other failure to write is one. */
const stopped = (code: string): Output =>
  code === "EPIPE" ? { exitCode: 0, readerMayLeave: true } : { notice: `Error: Could not write the result to stdout (${code})`, exitCode: 1 };
