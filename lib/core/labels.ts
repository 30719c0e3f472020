/**
 * Labels: up to 20 `key=value` pairs on a key, for an operator's own bookkeeping (`env=prod`,
 * `team=payments`) and for filtering lists. They grant nothing. Kept as a plain object with its keys in
 * sorted order, so two equal sets of labels are stored, compared and printed the same way.
 *
 * - A key: 1 to 63 characters, lower-case letters, digits and `.`, `_`, `-`, starting and ending with a
 *   letter or digit (`env`, `team.name`, `k8s-namespace`).
 * - A value: 1 to 128 characters, ASCII letters, digits, spaces and `. _ - : / @ +`, not starting or
 *   ending with a space; never a secret (it is stored and listed in clear).
 */
import { ServiceError } from "./errors.ts";
import { containsSecret, redactSecrets } from "./secret.ts";

export const LABELS_MAX = 20;
const KEY = /^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$/;
const VALUE = /^[A-Za-z0-9._:/@+-](?:[A-Za-z0-9 ._:/@+-]{0,126}[A-Za-z0-9._:/@+-])?$/;
export type Labels = Record<string, string>;

export const LABEL_KEY_RULE = "a label key is 1 to 63 lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit";
export const LABEL_VALUE_RULE = "a label value is 1 to 128 ASCII letters, digits, spaces or '. _ - : / @ +', not starting or ending with a space";

const shown = (text: string) => JSON.stringify(redactSecrets(text.length > 40 ? `${text.slice(0, 40)}…` : text));
const invalid = (message: string) => new ServiceError("INVALID_INPUT", message);

/** Labels in stored form: keys sorted; undefined for none. */
export function sortedLabels(labels: Labels): Labels | undefined {
  const keys = Object.keys(labels).sort();
  return keys.length ? Object.fromEntries(keys.map((key) => [key, labels[key]])) : undefined;
}

function checkPair(key: string, value: string): void {
  if (!KEY.test(key)) throw invalid(`Invalid label key ${shown(key)}: ${LABEL_KEY_RULE}`);
  if (containsSecret(value)) throw invalid(`Label ${key} must not hold an API key secret: labels are stored in clear`);
  if (!VALUE.test(value)) throw invalid(`Invalid value for label ${key} (${shown(value)}): ${LABEL_VALUE_RULE}`);
}

/** A labels object as stored or sent (GraphQL, the library, an import): valid pairs, at most 20. */
export function checkLabels(value: unknown): Labels | undefined {
  if (value === undefined || value === null) return undefined;
  const pairs: [string, unknown][] = Array.isArray(value)
    ? value.map((item) => [String(item?.key ?? ""), item?.value])
    : typeof value === "object" ? Object.entries(value) : [];
  if (!Array.isArray(value) && typeof value !== "object") throw invalid("Labels must be key=value pairs");
  const out: Labels = Object.create(null);
  for (const [key, raw] of pairs) {
    if (typeof raw !== "string") throw invalid(`The value of label ${shown(key)} must be a string`);
    checkPair(key, raw);
    if (Object.hasOwn(out, key)) throw invalid(`Label ${key} is given twice`);
    out[key] = raw;
  }
  if (Object.keys(out).length > LABELS_MAX) throw invalid(`A key has at most ${LABELS_MAX} labels`);
  return sortedLabels(out);
}

/**
 * `--label env=prod,team=ops` as pairs (values may not hold a comma). Each key at most once.
 * @example parseLabelFlag("env=prod, team=ops") // { env: "prod", team: "ops" }
 */
export function parseLabelFlag(text: string): Labels {
  const out: Labels = Object.create(null);
  for (const item of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const at = item.indexOf("=");
    if (at < 1) throw invalid(`Invalid label ${shown(item)}: expected key=value, for example env=prod`);
    const key = item.slice(0, at).trim(), value = item.slice(at + 1).trim();
    checkPair(key, value);
    if (Object.hasOwn(out, key)) throw invalid(`Label ${key} is given twice`);
    out[key] = value;
  }
  if (Object.keys(out).length === 0) throw invalid("--label needs key=value pairs, for example env=prod");
  return out;
}

/** `--unlabel env,team`: label keys. */
export function parseUnlabelFlag(text: string): string[] {
  const keys = text.split(",").map((s) => s.trim()).filter(Boolean);
  if (keys.length === 0) throw invalid("--unlabel needs label keys, for example env");
  for (const key of keys) if (!KEY.test(key)) throw invalid(`Invalid label key ${shown(key)}: ${LABEL_KEY_RULE}`);
  return keys;
}

/** `current` with `set` added or replaced and `unset` removed; at most 20 in the end. */
export function applyLabels(current: Labels | undefined, set: Labels = {}, unset: readonly string[] = []): Labels {
  const next: Labels = { ...current, ...set };
  for (const key of unset) delete next[key];
  if (Object.keys(next).length > LABELS_MAX) throw invalid(`A key has at most ${LABELS_MAX} labels (this would make ${Object.keys(next).length})`);
  return sortedLabels(next) ?? {};
}

/** `env=prod,team=ops`, for a list's column. */
export const formatLabels = (labels: Labels | undefined): string =>
  Object.entries(labels ?? {}).map(([key, value]) => `${key}=${value}`).join(",");
