/**
 * `Query.auditLog`: its types in the SDL, its arguments as a store query, and what one request may read
 * of the trail.
 */
import type { AuditEvent } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { parseSince } from "../core/lifecycle.ts";
import type { KeyStore } from "../store/key-store.ts";

type Args = Record<string, any>;

/** The audit trail's types in the SDL (`Query.auditLog` returns `AuditEvent`s). */
export const AUDIT_SDL = /* GraphQL */ `
"Who made a change. kind local: a person at a host (the CLI, the library), with user and host. kind key: the API key that called the service, with id and name."
type AuditActor {
  "local or key."
  kind: String!
  user: String
  host: String
  id: PrefixedID
  name: String
}

"One change to the key store. Never holds a secret or a hash."
type AuditEvent {
  "When the change was made (ISO 8601, UTC)."
  at: String!
  "create, overwrite, update, delete, prune (the removal of an expired key by deleteExpired), import, rotate (a new secret for the key), disable or enable (an update that disabled or enabled the key), or reuse (not a change: a retired secret of this key, deleted or replaced, was presented again; its actor is the key; at most one per key per minute per server)."
  action: String!
  "The key changed (for an overwrite, the new key)."
  id: PrefixedID!
  name: String!
  actor: AuditActor!
  "update, disable, enable: the fields it changed (name, description, roles, permissions, expiresAt, labels, disabled, disabledReason, rateLimits)."
  changed: [String!]
  "overwrite: the id of the key it replaced."
  replaced: PrefixedID
}

`;

/** What `auditLog` needs of a request's context: the store, and the reads the request made so far. */
export interface AuditContext {
  store: Pick<KeyStore, "audit">;
  /** This request's reads of the audit trail, by their arguments, and the events they may return in all. */
  audited?: { reads: Map<string, Promise<AuditEvent[]>>; events: number };
}

/**
 * `auditLog(limit)`: the default, and the most one answer holds (2 to 5 MB of JSON). `max` is also what one
 * request may read in all: aliases with the same arguments share one read, different ones add their limits.
 */
export const AUDIT_LOG_LIMIT = { default: 1_000, max: 10_000 } as const;

/** `auditLog`'s arguments as a store query; `since` and `before` read like `apikey --audit --since`. */
function auditQuery(args: Args, now: number): { since?: number; before?: number; limit: number } {
  const limit = args.limit ?? AUDIT_LOG_LIMIT.default;
  if (!(limit >= 1 && limit <= AUDIT_LOG_LIMIT.max)) {
    throw new ServiceError("INVALID_INPUT", `auditLog: limit is from 1 to ${AUDIT_LOG_LIMIT.max} (got ${limit})`);
  }
  return {
    ...(args.since == null ? {} : { since: parseSince(args.since, now, "since") }),
    ...(args.before == null ? {} : { before: parseSince(args.before, now, "before") }),
    limit,
  };
}

/**
 * The events `auditLog` returns for these arguments: read once per request for each set of arguments, like
 * `apiKeys`, and refused once the request's reads would return more than `AUDIT_LOG_LIMIT.max` in all, so
 * that no request costs more than the largest single answer.
 */
export function auditLog(args: Args, context: AuditContext): Promise<AuditEvent[]> {
  const query = auditQuery(args, Date.now());
  const audited = (context.audited ??= { reads: new Map(), events: 0 });
  const same = JSON.stringify([args.since ?? null, args.before ?? null, query.limit]);
  let read = audited.reads.get(same);
  if (!read) {
    if (audited.events + query.limit > AUDIT_LOG_LIMIT.max) {
      throw new ServiceError(
        "INVALID_INPUT",
        `auditLog: one request reads at most ${AUDIT_LOG_LIMIT.max} events in all, and its auditLog fields with different arguments ask for more (${audited.events + query.limit}); give aliases the same arguments (they share one read) or send separate requests`,
      );
    }
    audited.events += query.limit;
    audited.reads.set(same, read = context.store.audit(query));
  }
  return read;
}
