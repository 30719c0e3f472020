/**
 * The filter of `apikey --list --filter` and GraphQL `apiKeys(filter:)`: words separated by spaces, every
 * one of which a key must match.
 *
 *   label:env=prod   has the label env with the value prod     label:env   has a label env
 *   role:ADMIN       holds the role (case-insensitive)          state:expired  active, grace, expired or disabled
 *   name:deploy      its name contains the text                 deploy      the same, without the prefix
 *
 * A mistyped role, state or prefix is refused with a did-you-mean, never read as "matches nothing".
 */
import { ServiceError } from "./errors.ts";
import { KEY_STATES, keyState } from "./lifecycle.ts";
import { type ApiKeyInfo, ROLES } from "./model.ts";
import { didYouMean } from "./suggest.ts";

export type KeyFilter = (key: ApiKeyInfo, now: number) => boolean;
const PREFIXES = ["label", "role", "state", "name"] as const;
const MAX_FILTER = 500;

const invalid = (message: string) => new ServiceError("INVALID_INPUT", message);

function term(word: string): KeyFilter {
  const colon = word.indexOf(":");
  const prefix = colon < 0 ? "name" : word.slice(0, colon).toLowerCase();
  const value = colon < 0 ? word : word.slice(colon + 1);
  if (!value) throw invalid(`Filter '${word}' needs a value after the colon`);
  switch (prefix) {
    case "name": {
      const text = value.normalize("NFC").toLowerCase();
      return (key) => key.name.toLowerCase().includes(text);
    }
    case "role": {
      const role = value.toUpperCase();
      if (!ROLES.includes(role as never)) throw invalid(`Unknown role '${value}' in the filter.${didYouMean(role, ROLES)} Valid roles: ${ROLES.join(", ")}`);
      return (key) => key.roles.includes(role as never);
    }
    case "state": {
      const state = value.toLowerCase();
      if (!KEY_STATES.includes(state as never)) throw invalid(`Unknown state '${value}' in the filter.${didYouMean(state, KEY_STATES)} States: ${KEY_STATES.join(", ")}`);
      return (key, now) => keyState(key, now) === state;
    }
    case "label": {
      const at = value.indexOf("=");
      const name = at < 0 ? value : value.slice(0, at);
      const wanted = at < 0 ? undefined : value.slice(at + 1);
      if (!name || wanted === "") throw invalid(`Filter '${word}' needs a label key and, after '=', a value: label:env or label:env=prod`);
      return (key) => key.labels !== undefined && Object.hasOwn(key.labels, name) && (wanted === undefined || key.labels[name] === wanted);
    }
    default:
      throw invalid(`Unknown filter '${prefix}:'.${didYouMean(prefix, PREFIXES)} Use label:, role:, state:, name: or a part of the name`);
  }
}

/**
 * The predicate of a filter expression (INVALID_INPUT when it is wrong); every word must match.
 * @example parseFilter("label:env=prod role:admin")(key, Date.now())
 */
export function parseFilter(expression: string): KeyFilter {
  if (expression.length > MAX_FILTER) throw invalid(`A filter is at most ${MAX_FILTER} characters`);
  const terms = expression.trim().split(/\s+/).filter(Boolean).map(term);
  return (key, now) => terms.every((matches) => matches(key, now));
}
