/**
 * What `/auth` requires of a key: the `RESOURCE:ACTION` pairs named by the `X-Required-Permission` header
 * and the `permission` query parameter (several comma-separated, or repeated: all needed), parsed by the
 * same schema as the CLI's `--permissions`. Both sources count: a client that adds the header itself (a
 * proxy passing the client's headers on, like Traefik) can only require more, never less, than the
 * proxy's configuration. A proxy sends the same text for each request of a location, so each text is
 * parsed once and remembered (a bounded number of them).
 */
import { createLru } from "../core/_lru.ts";
import { parseInput, PermissionsSchema } from "../core/input.ts";
import type { AuthAction, Resource } from "../core/model.ts";
import { canPair, type Grants } from "../core/policy.ts";

/** One required pair, joined and split, as `canPair` takes it. */
type Pair = readonly [pair: string, resource: Resource, action: AuthAction];
/** The pairs required, or the message of a 400 saying what is wrong. */
export type Requirement = readonly Pair[] | { problem: string };

/** The longest requirement text read: every pair there is (29 resources, 8 actions) fits in it. */
const MAX_REQUIREMENT_CHARS = 8_192;
const FORM = "RESOURCE:ACTION, several comma-separated (all needed), like DOCKER:READ_ANY,VMS:UPDATE_ANY";
const NONE: Requirement = Object.freeze([]);
const remembered = createLru<string, Requirement>(512);

/** Parses one requirement text (the header's and the parameter's, joined by a comma). */
function parse(text: string): Requirement {
  try {
    const permissions = parseInput(PermissionsSchema, text);
    return Object.freeze(permissions.flatMap((p) => p.actions.map((action): Pair => [`${p.resource}:${action}`, p.resource, action])));
  } catch (error) {
    return { problem: `${(error as Error).message} (in X-Required-Permission or the permission parameter: use ${FORM})` };
  }
}

/**
 * The requirement of a request: `header` (X-Required-Permission, repeated ones joined by commas) and the
 * `permission` parameters of its query string (`query`: what follows `?`, or null).
 * @example requirement("DOCKER:READ_ANY", null) // [["DOCKER:READ_ANY", "DOCKER", "READ_ANY"]]
 */
export function requirement(header: string | null, query: string | null): Requirement {
  const params = query === null || !query.includes("permission") ? [] : new URLSearchParams(query).getAll("permission");
  const text = header === null ? params.join(",") : params.length ? `${header},${params.join(",")}` : header;
  if (!text.trim()) return NONE;
  // Not remembered: a long text would hold memory, and no proxy's configuration sends one.
  if (text.length > MAX_REQUIREMENT_CHARS) return { problem: `The required permission is longer than ${MAX_REQUIREMENT_CHARS} characters: use ${FORM}` };
  let found = remembered.get(text);
  if (found === undefined) remembered.set(text, (found = parse(text)));
  return found;
}

/** True when `grants` hold every pair of `pairs`. */
export function holdsAll(grants: Grants, pairs: readonly Pair[]): boolean {
  for (const [pair, resource, action] of pairs) if (!canPair(grants, pair, resource, action)) return false;
  return true;
}
