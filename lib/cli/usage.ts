/**
 * `apikey --usage`, and the key `--update` and `--usage` act on: chosen by `--name` or `--id`.
 */
import type { ApiKeyInfo, KeyUsage } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { LookupNameSchema, parseInput } from "../core/input.ts";
import type { ApikeyFlags } from "./flags.ts";
import type { CliBackend } from "./command.ts";
import { notFoundMessage, type Output } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";

/** The key `--name` or `--id` names (by id: `get` where the store has it, else the list), or NOT_FOUND. */
export async function chosenKey(flags: ApikeyFlags, store: CliBackend, mode: string): Promise<ApiKeyInfo> {
  if (flags.name === undefined && flags.id === undefined) throw new ServiceError("USAGE", `--${mode} needs --name <name> or --id <id> to choose the key`);
  const found = flags.id !== undefined
    ? await (store.get ? store.get(flags.id) : (async () => (await store.list()).find((key) => key.id === flags.id) ?? null)())
    : await store.getByName(parseInput(LookupNameSchema, flags.name));
  if (!found) {
    throw new ServiceError("NOT_FOUND", flags.id !== undefined ? `No API key found with id: ${flags.id}` : notFoundMessage(flags.name!.trim()));
  }
  return found;
}

/** The text form: the total, then one line per day with a use. */
function usageText(key: ApiKeyInfo, usage: KeyUsage): string {
  const total = `API key '${key.name}' (id ${key.id}) authenticated ${usage.total} request${usage.total === 1 ? "" : "s"}`;
  if (usage.days.length === 0) return `${total}; none in the last 30 days (UTC)\n`;
  return `${total}; in the last 30 days (UTC):\n${usage.days.map(({ date, count }) => `  ${date}  ${count}\n`).join("")}`;
}

/**
 * `--usage`: how many requests the key authenticated, in all and per day for the last 30 (UTC). Counts
 * reach the store within about a minute of the requests (see lib/store/last-use.ts).
 * @example await showUsage({ usage: true, name: "ci" }, store, true) // stdout {"total":3,"days":[{"date":"2026-11-25","count":3}]}
 */
export async function showUsage(flags: ApikeyFlags, store: CliBackend, asJson: boolean): Promise<Output> {
  const key = await chosenKey(flags, store, "usage");
  const usage = await store.usage(key.id);
  if (!usage) throw new ServiceError("NOT_FOUND", `No API key found with id: ${key.id} (it was deleted meanwhile)`);
  if (asJson) return { stdout: jsonLine({ total: usage.total, days: usage.days }), exitCode: 0 };
  return { stdout: usageText(key, usage), exitCode: 0 };
}
