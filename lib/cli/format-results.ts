/**
 * What a command prints, and the results of `apikey` other than the list (./format.ts) as plain text or
 * JSON: a new key, a delete, nothing deleted, any failure. Functions here only build strings; the CLI
 * decides where they go (stdout for data, stderr for people).
 */
import type { ApiKeyInfo, CreatedKey } from "../core/model.ts";
import { isServiceError, ServiceError } from "../core/errors.ts";
import { redactSecrets } from "../core/secret.ts";
import { jsonLine } from "./json-text.ts";
import { NEED_ROLE_OR_PERMISSION } from "../core/input.ts";

/** What a command prints: `stdout` is data, `notice` is a line for people (stderr), and the exit status. */
export interface Output {
  stdout?: string;
  notice?: string;
  exitCode: number;
  /**
   * Set when stdout carries a new key's secret, its only copy: see `undeliveredCreate`. `replaced`: a key
   * of that name was there and is replaced (it keeps working until `graceUntil` when given). `rotated`: the
   * key is the same, with a new secret (`--rotate`).
   */
  created?: { id: string; name: string; replaced: boolean; graceUntil?: string; rotated?: boolean };
  /** A reader that stops early (`--list | head -1`) is no failure: the data was only for reading. */
  readerMayLeave?: boolean;
}

/** Every JSON output goes through the one writer that keeps it safe to print (./json-text.ts). */
const json = jsonLine;

export const NO_KEYS_MESSAGE = "No API keys found to delete";
export const notFoundMessage = (name: string) => `No API key found with name: ${name}`;

/** A time for a sentence: "2026-12-01 18:00:45 UTC". */
export const sentenceTime = (iso: string) => `${iso.replace("T", " ").slice(0, 19)} UTC`;

/** What a create tells people on stderr: the key, its expiry, and how long a replaced secret still works. */
export function createdSummary(created: CreatedKey, replaced: boolean, graceUntil?: string): string {
  const expiry = created.expiresAt ? `, expiring ${sentenceTime(created.expiresAt)}` : "";
  const grace = graceUntil ? ` The secret it replaced keeps working until ${sentenceTime(graceUntil)}.` : "";
  return `${replaced ? "Replaced" : "Created"} API key '${created.name}' (id ${created.id})${expiry}.${grace} ` +
    "Store the key now: it is not shown again.";
}

/** The create result for scripts: `{key, name, id}`, and `expiresAt` when the key expires (never null). */
export const createdJson = (created: CreatedKey) =>
  ({ key: created.key, name: created.name, id: created.id, ...(created.expiresAt ? { expiresAt: created.expiresAt } : {}) });

/**
 * Create: JSON `{key, name, id}` (+ `expiresAt`); plain: the secret alone on stdout, a summary for people.
 * `graceUntil`: the secret of the key this one replaced works until then (`--overwrite --grace`).
 */
export function formatCreated(created: CreatedKey, asJson: boolean, replaced = false, graceUntil?: string): Output {
  if (asJson) return { stdout: json(createdJson(created)), exitCode: 0 };
  return { stdout: created.key + "\n", notice: createdSummary(created, replaced, graceUntil), exitCode: 0 };
}

/** Delete success: `{deleted, keys:[{id,name}]}` or "Successfully deleted N API key(s)". */
export function formatDeleted(keys: ApiKeyInfo[], asJson: boolean): Output {
  if (asJson) {
    return { stdout: json({ deleted: keys.length, keys: keys.map(({ id, name }) => ({ id, name })) }), exitCode: 0 };
  }
  return { stdout: `Successfully deleted ${keys.length} API key${keys.length === 1 ? "" : "s"}\n`, exitCode: 0 };
}

/**
 * Delete found nothing. With an empty store: `{deleted:0, message}`; when keys exist but none has
 * the name: `{deleted:0, error}` naming it. Both exit 1.
 */
export function formatNothingDeleted(name: string | undefined, storeEmpty: boolean, asJson: boolean): Output {
  const code = storeEmpty ? "NO_KEYS" : "NOT_FOUND";
  if (asJson) {
    const body = storeEmpty || name === undefined
      ? { deleted: 0, message: NO_KEYS_MESSAGE, code }
      : { deleted: 0, error: notFoundMessage(name), code };
    return { stdout: json(body), exitCode: 1 };
  }
  return { notice: storeEmpty || name === undefined ? NO_KEYS_MESSAGE : notFoundMessage(name), exitCode: 1 };
}

/** Nothing deleted because the person chose so: not a failure (exit 0), in the delete result's shape. */
export function formatNothingChosen(message: string, asJson: boolean): Output {
  if (asJson) return { stdout: json({ deleted: 0, keys: [], message }), exitCode: 0 };
  return { notice: message, exitCode: 0 };
}

/**
 * What is printed, with the one rule of `redactSecrets` applied to every line and JSON field: a key pasted
 * into the wrong flag (`--delete --id sapi_…`, `--name <its body>`) is never echoed back. Only the stdout
 * of a create (`created`: it carries the new key's secret, if `deliver` has not written it yet) is kept.
 */
export function elideSecrets(output: Output): Output {
  const stdout = output.stdout === undefined || output.created ? output.stdout : redactSecrets(output.stdout);
  const notice = output.notice === undefined ? undefined : redactSecrets(output.notice);
  return stdout === output.stdout && notice === output.notice ? output : { ...output, stdout, notice };
}

/** Any failure: JSON `{error, code}` on stdout, or a one-line message for people. */
export function formatError(error: unknown, asJson: boolean): Output {
  const known = isServiceError(error)
    ? error
    : new ServiceError("INTERNAL", `Unexpected error: ${error instanceof Error ? error.message : String(error)}`);
  // Last line of defence: a key pasted where a flag, command or value belongs is never echoed back.
  const message = redactSecrets(known.message);
  if (asJson) return { stdout: json({ error: message, code: known.code }), exitCode: known.exitCode };
  return { notice: `Error: ${message}${HINTS[message] ?? ""}`, exitCode: known.exitCode };
}

/** What to do, after a message that the specification words and scripts may match exactly (`--json` keeps it bare). */
const HINTS: Record<string, string> = {
  [NEED_ROLE_OR_PERMISSION]: " Give --roles <roles>, --permissions <RESOURCE:ACTION,...> or --preset <name> (service-api apikey --create --help lists them).",
};
