/**
 * A field's rule: the permission it needs and how it resolves, and what every resolver sees. Every
 * field names the permission it needs; a key without it gets `null` for that field and a `FORBIDDEN`
 * error (a standard partial result). The rules are in `query-fields.ts` and `mutation-fields.ts`.
 */
import type { ApiKeyInfo, AuthAction, KeyUsage, Resource } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { can, canPair } from "../core/policy.ts";
import type { KeyStore } from "../store/key-store.ts";
import type { AuditContext } from "./audit-log.ts";

/** What every resolver sees: the authenticated key and the store. */
export type GraphQLContext = {
  key: ApiKeyInfo;
  store: KeyStore;
  /** This request's `store.list()`, once asked for. */
  listed?: Promise<ApiKeyInfo[]>;
  /** This request's reads of `store.usage(id)`, by key id. */
  usages?: Map<string, Promise<KeyUsage | null>>;
  /** Notes a key's use (the service's last-use recorder; a no-op when it records none); absent: the store's own recorder. */
  seen?: (id: string) => void;
} & Pick<AuditContext, "audited">;

export type Args = Record<string, any>;
type Resolver = (args: Args, context: GraphQLContext, source: any) => unknown;

/** A field's permission: `RESOURCE:ACTION`, where an `_OWN` action is checked against the id the field acts on. */
export interface Rule {
  needs: `${Resource}:${AuthAction}`;
  /** For `_ANY` rules: the id the field acts on; holding the matching `_OWN` action suffices when it is the caller's. */
  own?: (args: Args) => readonly string[];
  /** The answer depends on nothing but the caller's key and the arguments: not on the store, the host or the clock. */
  keyOnly?: true;
  resolve: Resolver;
}

export function forbidden(message: string): ServiceError {
  return new ServiceError("FORBIDDEN", message);
}

/** Throws `FORBIDDEN` unless the caller's key holds what `rule` needs for these arguments. */
export function authorize(rule: Rule, args: Args, context: GraphQLContext): void {
  const { resource, action, ownAction } = needsOf(rule);
  if (canPair(context.key, rule.needs, resource, action)) return;
  const ids = rule.own?.(args);
  if (ids && ids.length > 0 && ids.every((id) => id === context.key.id) && can(context.key, resource, ownAction)) return;
  throw forbidden(`Forbidden: this API key lacks the permission ${rule.needs}`);
}

type Needs = { resource: Resource; action: AuthAction; ownAction: AuthAction };
/** Each rule's `needs`, split once: `authorize` runs for every field of every request. */
const split = new WeakMap<Rule, Needs>();

function needsOf(rule: Rule): Needs {
  let needs = split.get(rule);
  if (!needs) {
    const [resource, action] = rule.needs.split(":") as [Resource, AuthAction];
    split.set(rule, needs = { resource, action, ownAction: action.replace(/_ANY$/, "_OWN") as AuthAction });
  }
  return needs;
}
