/**
 * Every result and error of the `apikey` command as plain text or JSON: the list here (its layout is
 * lib/cli/list.ts's), the others in ./format-results.ts, which the create and delete paths import.
 * Functions here only build strings; the CLI decides where they go (stdout for data, stderr for people).
 */
import type { ApiKeyInfo } from "../core/model.ts";
import { listLines, listTable, type ListView, stdoutView } from "./list.ts";
import { jsonLine } from "./json-text.ts";
import type { Output } from "./format-results.ts";

export * from "./format-results.ts";

/** Every JSON output goes through the one writer that keeps it safe to print (./json-text.ts). */
const json = jsonLine;

/**
 * List: `{keys:[...]}`; on a terminal a table fitted to its width; on a pipe tab-separated lines
 * (lib/cli/list.ts). Never a secret (the store has none). `where`: the store, named when it is empty.
 */
export function formatList(keys: ApiKeyInfo[], asJson: boolean, view: ListView = stdoutView(), where?: string): Output {
  if (asJson) return { stdout: json({ keys }), exitCode: 0 };
  if (keys.length === 0) return { notice: where ? `No API keys stored in ${where}` : "No API keys stored", exitCode: 0 };
  const now = view.now ?? Date.now();
  return { stdout: view.tty ? listTable(keys, view.columns, now) : listLines(keys, now), exitCode: 0 };
}
