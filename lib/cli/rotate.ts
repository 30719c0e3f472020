/**
 * `apikey --rotate`: a new secret for an existing key, which keeps its id and every setting. It prints
 * what a create prints (the secret alone, `{"key","name","id"}` with --json, dotenv lines with --format env,
 * or all of it to --output's file), with a summary on stderr. And the notice `--overwrite` gives when the key
 * it made from the flags lacks settings the replaced key had.
 */
import type { ApiKeyInfo, CreatedKey, RotatedKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { LookupNameSchema, parseInput } from "../core/input.ts";
import { permissionPairs } from "../core/model.ts";
import type { CliBackend } from "./command.ts";
import type { ApikeyFlags, LifecycleValues } from "./flags.ts";
import { formatCreated, notFoundMessage, type Output, sentenceTime } from "./format-results.ts";
import { formatEnv } from "./format-scripts.ts";
import { checkOutputTarget } from "./secret-file.ts";

/** The key --id or --name chooses, or NOT_FOUND (exit 1). */
async function chosenKey(flags: ApikeyFlags, store: CliBackend): Promise<ApiKeyInfo> {
  if (flags.id !== undefined) {
    const found = store.get ? await store.get(flags.id) : (await store.list()).find((key) => key.id === flags.id && !key.graceUntil);
    if (!found) throw new ServiceError("NOT_FOUND", `No API key found with id: ${flags.id}`);
    return found;
  }
  const name = parseInput(LookupNameSchema, flags.name);
  const found = await store.getByName(name);
  if (!found) throw new ServiceError("NOT_FOUND", notFoundMessage(name));
  return found;
}

/** What a rotation tells people on stderr: the key, and until when its old secret works. */
export function rotatedSummary(rotated: CreatedKey, graceUntil?: string): string {
  const old = graceUntil ? `keeps working until ${sentenceTime(graceUntil)}` : "no longer works";
  const expiry = rotated.expiresAt ? `, expiring ${sentenceTime(rotated.expiresAt)} as before` : "";
  return `Rotated API key '${rotated.name}' (id ${rotated.id}): a new secret, the same settings${expiry}. ` +
    `The old secret ${old}. Store the key now: it is not shown again.`;
}

/**
 * What a rotation says when it ends the old secret an earlier rotation with grace left working (a key keeps
 * at most one): that secret, by the end it had been given (the secret itself is never known), else undefined.
 * The store says what it ended (`ended`, read under the key's lock, so a rotation running at the same time
 * cannot hide it); a backend that cannot say (a remote one) is judged by `before`, the key read beforehand.
 */
export function endedNotice(rotated: RotatedKey, before: ApiKeyInfo, now: number): string | undefined {
  const until = rotated.ended === undefined ? before.retiringUntil : rotated.ended?.until;
  if (!until || Date.parse(until) <= now) return undefined;
  return `The old secret of its previous rotation, which was to keep working until ${sentenceTime(until)}, ` +
    "stops now: a key keeps at most one old secret.";
}

/**
 * Runs `apikey --rotate (--name <name> | --id <id>) [--grace <d>]`. `values.graceMs` was checked with the
 * other flags before any store was opened.
 */
export async function rotateKey(flags: ApikeyFlags, values: LifecycleValues, store: CliBackend, asJson: boolean): Promise<Output> {
  if (flags.name === undefined && flags.id === undefined) {
    throw new ServiceError("USAGE", "--rotate needs --name <name> or --id <id> to choose the key");
  }
  if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
  const key = await chosenKey(flags, store);
  const { graceMs } = values;
  // Read before the store starts the period, so the old secret works at least until the time printed.
  const graceFrom = graceMs ? Date.now() : undefined;
  const rotated = await store.rotate(key.id, graceMs ? { graceMs } : {});
  const graceUntil = graceFrom === undefined ? undefined : new Date(graceFrom + graceMs!).toISOString();
  const output = flags.format === "env" ? formatEnv(rotated, true, graceUntil) : formatCreated(rotated, asJson, true, graceUntil);
  if (!asJson) output.notice = rotatedSummary(rotated, graceUntil);
  const ended = endedNotice(rotated, key, graceFrom ?? Date.now());
  if (ended) output.notice = output.notice ? `${output.notice}\n${ended}` : ended;
  return { ...output, created: { id: rotated.id, name: rotated.name, replaced: true, graceUntil, rotated: true } };
}

/**
 * `--overwrite` makes a new key from the flags given: the settings of the replaced key it leaves out, named
 * in one line for stderr, or undefined when it leaves out none.
 */
export function overwriteNotice(old: ApiKeyInfo, created: ApiKeyInfo): string | undefined {
  const lost: string[] = [];
  if (old.expiresAt && !created.expiresAt) lost.push(`the expiry (${sentenceTime(old.expiresAt)})`);
  if (old.description && !created.description) lost.push("the description");
  if (old.labels && Object.keys(old.labels).length && !(created.labels && Object.keys(created.labels).length)) lost.push("the labels");
  if (old.roles.length && !created.roles.length) lost.push(`the roles (${old.roles.join(", ")})`);
  if (old.permissions.length && !created.permissions.length) {
    const pairs = permissionPairs(old.permissions);
    lost.push(`the permissions (${pairs.slice(0, 5).join(", ")}${pairs.length > 5 ? `, and ${pairs.length - 5} more` : ""})`);
  }
  if (!lost.length) return undefined;
  const list = lost.length === 1 ? lost[0] : `${lost.slice(0, -1).join(", ")} and ${lost.at(-1)}`;
  return `Note: the new key does not carry over ${list} of the key it replaced: --overwrite makes a new key from the flags given. ` +
    "To change only a key's secret and keep its settings, use --rotate.";
}

/** Adds `overwriteNotice` to a create's stderr, when an overwrite of `old` dropped any of its settings. */
export function noteDropped(output: Output, old: ApiKeyInfo | null | undefined, created: ApiKeyInfo): Output {
  const lost = old ? overwriteNotice(old, created) : undefined;
  if (lost) output.notice = output.notice ? `${output.notice}\n${lost}` : lost;
  return output;
}
