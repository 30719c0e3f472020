/**
 * The outputs scripts ask for beyond the specified shapes: a create as dotenv lines (`--format env`),
 * a create skipped by `--if-not-exists`, a delete skipped by `--if-exists`, and an update.
 */
import type { ApiKeyInfo, CreatedKey } from "../core/model.ts";
import { createdSummary, type Output, sentenceTime } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";

/** Every JSON output goes through the one writer that keeps it safe to print (./json-text.ts). */
const json = jsonLine;

/**
 * A value for a dotenv file that a POSIX shell can also `source`: bare when it is only safe characters
 * (a secret, an id), else in single quotes, with a quote written `'\''`. Names hold letters, digits
 * and spaces only, so the escape is for names a remote service sends.
 */
export function envValue(value: string): string {
  return /^[A-Za-z0-9_.:/-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * `--format env`: SERVICE_API_KEY_SECRET, SERVICE_API_KEY_ID and SERVICE_API_KEY_NAME lines, and
 * SERVICE_API_KEY_EXPIRES_AT when it expires. Not SERVICE_API_KEY: remote mode reads that one, so sourcing
 * the new key's lines would silently change which key the CLI then acts as.
 */
export function formatEnv(created: CreatedKey, replaced: boolean, graceUntil?: string): Output {
  const expires = created.expiresAt ? `SERVICE_API_KEY_EXPIRES_AT=${envValue(created.expiresAt)}\n` : "";
  return {
    stdout: `SERVICE_API_KEY_SECRET=${envValue(created.key)}\nSERVICE_API_KEY_ID=${envValue(created.id)}\nSERVICE_API_KEY_NAME=${envValue(created.name)}\n${expires}`,
    notice: createdSummary(created, replaced, graceUntil),
    exitCode: 0,
  };
}

/** `--if-not-exists` and the name is taken: nothing created, no secret; `{"name","id","created":false}`. */
export function formatExisting(existing: ApiKeyInfo, asJson: boolean, env: boolean): Output {
  const notice = `API key '${existing.name}' already exists (id ${existing.id}); nothing was created (--if-not-exists)`;
  if (asJson) return { stdout: json({ name: existing.name, id: existing.id, created: false }), exitCode: 0 };
  if (env) return { stdout: `SERVICE_API_KEY_ID=${envValue(existing.id)}\nSERVICE_API_KEY_NAME=${envValue(existing.name)}\n`, notice, exitCode: 0 };
  return { notice, exitCode: 0 };
}

/** `--if-exists` and nothing matched: exit 0, the not-found message as the spec's `message` variant. */
export function formatNothingToDelete(message: string, code: string, asJson: boolean): Output {
  if (asJson) return { stdout: json({ deleted: 0, message, code }), exitCode: 0 };
  return { notice: `${message} (nothing to delete: --if-exists)`, exitCode: 0 };
}

/** `--update`: the key as `--list --json` shows one, or a line saying what changed (and the expiry, when that changed). */
export function formatUpdated(key: ApiKeyInfo, before: ApiKeyInfo, asJson: boolean): Output {
  if (asJson) return { stdout: json(key), exitCode: 0 };
  const renamed = key.name !== before.name ? ` (renamed from '${before.name}')` : "";
  const expiry = key.expiresAt === before.expiresAt
    ? ""
    : key.expiresAt ? `; it expires ${sentenceTime(key.expiresAt)}` : "; it no longer expires";
  const state = key.disabled === before.disabled ? "" : key.disabled ? "; it is disabled: refused until --enable" : "; it is enabled again";
  return { stdout: `Updated API key '${key.name}'${renamed} (id ${key.id})${expiry}${state}\n`, exitCode: 0 };
}
