/**
 * Unkey's permission query (`permissions` of `POST /v2/keys.verifyKey`) over our vocabulary: permission names
 * are `RESOURCE:ACTION` pairs (any case), joined by `AND` and `OR` (any case; AND binds tighter) and grouped
 * with parentheses: `DOCKER:READ_ANY AND (VMS:READ_ANY OR VMS:UPDATE_ANY)`. Each name is checked like
 * `--permissions` (an unknown resource or action is an error naming the valid ones).
 */
import { ServiceError } from "./errors.ts";
import { parseInput } from "./input.ts";
import { PermissionsSchema } from "./access-input.ts";
import type { AuthAction, Resource } from "./model.ts";
import { canPair, type Grants } from "./policy.ts";

/** A parsed query: a pair, or an AND / OR of queries. */
export type QueryPair = { pair: string; resource: Resource; action: AuthAction };
export type PermissionQuery =
  | QueryPair
  | { and: PermissionQuery[] }
  | { or: PermissionQuery[] };

const MAX_QUERY_CHARS = 1_000;
const MAX_DEPTH = 16;
const QUERY_FORM = "RESOURCE:ACTION names joined by AND and OR, grouped with parentheses, like DOCKER:READ_ANY AND (VMS:READ_ANY OR VMS:UPDATE_ANY)";

const invalid = (why: string) => new ServiceError("INVALID_INPUT", `Invalid permission query: ${why}; use ${QUERY_FORM}`);

/**
 * Parses a permission query; throws an INVALID_INPUT `ServiceError` saying what is wrong.
 * @example parsePermissionQuery("docker:read_any or vms:read_any") // { or: [{ pair: "DOCKER:READ_ANY", … }, { pair: "VMS:READ_ANY", … }] }
 */
export function parsePermissionQuery(text: string): PermissionQuery {
  if (text.length > MAX_QUERY_CHARS) throw invalid(`it is longer than ${MAX_QUERY_CHARS} characters`);
  const tokens = text.match(/\(|\)|[^\s()]+/g) ?? [];
  if (tokens.length === 0) throw invalid("it is empty");
  let at = 0;
  const word = (t: string | undefined, w: string) => t !== undefined && t.toUpperCase() === w;

  const list = (kind: "and" | "or", depth: number): PermissionQuery => {
    const items = [kind === "or" ? list("and", depth) : operand(depth)];
    while (word(tokens[at], kind.toUpperCase())) {
      at++;
      items.push(kind === "or" ? list("and", depth) : operand(depth));
    }
    return items.length === 1 ? items[0] : kind === "and" ? { and: items } : { or: items };
  };
  const operand = (depth: number): PermissionQuery => {
    const token = tokens[at++];
    if (token === undefined) throw invalid("it ends where a permission or '(' was expected");
    if (token === "(") {
      if (depth >= MAX_DEPTH) throw invalid(`parentheses nest deeper than ${MAX_DEPTH}`);
      const inner = list("or", depth + 1);
      if (tokens[at++] !== ")") throw invalid("a '(' is not closed");
      return inner;
    }
    if (token === ")" || word(token, "AND") || word(token, "OR")) throw invalid(`'${token}' where a permission was expected`);
    const [permission, more] = parseInput(PermissionsSchema, token);
    if (!permission || more || permission.actions.length !== 1) throw invalid("each name is one RESOURCE:ACTION");
    const action = permission.actions[0];
    return { pair: `${permission.resource}:${action}`, resource: permission.resource, action };
  };

  const query = list("or", 0);
  if (at < tokens.length) throw invalid(tokens[at] === ")" ? "a ')' has no '('" : `'${tokens[at].slice(0, 40)}' follows a complete query: join with AND or OR`);
  return query;
}

/** True when `grants` satisfy `query`. */
export function satisfies(grants: Grants, query: PermissionQuery): boolean {
  if ("pair" in query) return canPair(grants, query.pair, query.resource, query.action);
  return "and" in query ? query.and.every((q) => satisfies(grants, q)) : query.or.some((q) => satisfies(grants, q));
}

/** A pair of `query` that `grants` lack (there is one whenever `grants` do not satisfy it: queries only require). */
export function lackedPair(grants: Grants, query: PermissionQuery): QueryPair | undefined {
  if ("pair" in query) return canPair(grants, query.pair, query.resource, query.action) ? undefined : query;
  for (const q of "and" in query ? query.and : query.or) {
    const lacked = lackedPair(grants, q);
    if (lacked) return lacked;
  }
  return undefined;
}
