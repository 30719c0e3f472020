/**
 * `Query.auditLog`: its types in the SDL, its arguments as a store query, and what one request may read
 * of the trail.
 */
import type { AuditEvent } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { parseSince } from "../core/lifecycle.ts";
import { type AuditPage, badCursor } from "../store/audit.ts";
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

"A page of the audit trail in the order it was written (auditTrail)."
type AuditTrailPage {
  "Oldest first, in the order written."
  events: [AuditEvent!]!
  "Pass as cursor for the page before this one; null when the trail holds nothing more the query wants."
  cursor: String
}

`;

/** What `auditLog` needs of a request's context: the store, and the reads the request made so far. */
export interface AuditContext {
  store: Pick<KeyStore, "audit" | "auditPage">;
  /** This request's reads of the audit trail, by their arguments, and the events they may return in all. */
  audited?: { reads: Map<string, Promise<unknown>>; events: number };
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

/** The request's reads so far, refusing one that would take them past `AUDIT_LOG_LIMIT.max` events in all. */
function budgeted<T>(context: AuditContext, same: string, limit: number, read: () => Promise<T>): Promise<T> {
  const audited = (context.audited ??= { reads: new Map(), events: 0 });
  let answer = audited.reads.get(same);
  if (!answer) {
    if (audited.events + limit > AUDIT_LOG_LIMIT.max) {
      throw new ServiceError(
        "INVALID_INPUT",
        `auditLog: one request reads at most ${AUDIT_LOG_LIMIT.max} events in all, and its auditLog fields with different arguments ask for more (${audited.events + limit}); give aliases the same arguments (they share one read) or send separate requests`,
      );
    }
    audited.events += limit;
    audited.reads.set(same, answer = read());
  }
  return answer as Promise<T>;
}

/**
 * `auditTrail`: a page in the order the trail was written, from `cursor` back (the trail's end without
 * one). Paging by position finds every event once, however the events' times step back; `since` and
 * `before` only filter. Same limits and budget as `auditLog`.
 */
export function auditTrail(args: Args, context: AuditContext): Promise<AuditPage> {
  const query = { ...auditQuery(args, Date.now()), ...(args.cursor == null ? {} : { cursor: String(args.cursor) }) };
  if (query.cursor !== undefined && query.cursor.length > 100) throw badCursor(query.cursor); // every log's are shorter
  const same = JSON.stringify(["trail", args.since ?? null, args.before ?? null, query.limit, query.cursor ?? null]);
  return budgeted(context, same, query.limit, () => context.store.auditPage(query));
}

/**
 * The events `auditLog` returns for these arguments: read once per request for each set of arguments, like
 * `apiKeys`, and refused once the request's reads would return more than `AUDIT_LOG_LIMIT.max` in all, so
 * that no request costs more than the largest single answer.
 */
export function auditLog(args: Args, context: AuditContext): Promise<AuditEvent[]> {
  const query = auditQuery(args, Date.now());
  const same = JSON.stringify([args.since ?? null, args.before ?? null, query.limit]);
  return budgeted(context, same, query.limit, () => context.store.audit(query));
}
