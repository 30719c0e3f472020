/**
 * What the remote backend asks the service for and how it reads the answers: the GraphQL selections of a
 * key and of an audit event, the valibot schemas every answer is checked against (each string escaped for
 * the terminal, lib/client/_untrusted.ts), and their conversion to the store's shapes.
 */
import * as v from "valibot";
import type { Actor, ApiKeyInfo, AuditAction, AuditEvent } from "../core/model.ts";
import { ServerText, untrustedText } from "./_untrusted.ts";
import { CreditsSchema } from "./_usage.ts";

/** The fields of a key every query and mutation selects. */
export const FIELDS = "id name description roles createdAt permissions { resource actions } expiresAt lastUsedAt graceUntil retiringUntil labels { key value } disabled disabledReason rateLimits { limit durationMs } credits { remaining refill { amount interval } } allowFrom";
/** The fields of an audit event `auditLog` selects. */
export const EVENT_FIELDS = "at action id name actor { kind user host id name } changed replaced";

/** A time from the server: ISO 8601 or the answer is refused (it is printed and compared as one). */
const ServerTime = v.pipe(v.string(), v.isoTimestamp(), v.transform((s) => untrustedText(s)));

/** A key as the service sends it; every string is escaped for the terminal (lib/client/_untrusted.ts). */
const RawKeySchema = v.object({
  id: ServerText,
  name: ServerText,
  description: v.nullish(ServerText),
  roles: v.array(ServerText),
  createdAt: ServerText,
  permissions: v.array(v.object({ resource: ServerText, actions: v.array(ServerText) })),
  expiresAt: v.nullish(ServerTime),
  lastUsedAt: v.nullish(ServerTime),
  graceUntil: v.nullish(ServerTime),
  retiringUntil: v.nullish(ServerTime),
  labels: v.nullish(v.array(v.object({ key: ServerText, value: ServerText }))),
  disabled: v.nullish(v.boolean()),
  disabledReason: v.nullish(ServerText),
  rateLimits: v.nullish(v.array(v.object({ limit: v.number(), durationMs: v.number() }))),
  credits: v.nullish(CreditsSchema),
  allowFrom: v.nullish(v.array(ServerText)),
});
type Nullable<T, K extends keyof T> = Omit<T, K> & { [P in K]?: T[P] | null };
/** A key as GraphQL gives it: `null` for absent fields, labels as a list of pairs. */
export type RawKey = Nullable<Omit<ApiKeyInfo, "labels" | "disabled">, "description" | "expiresAt" | "lastUsedAt" | "graceUntil" | "retiringUntil" | "disabledReason" | "rateLimits" | "credits" | "allowFrom"> & {
  labels?: { key: string; value: string }[] | null;
  disabled?: boolean | null;
};
/** Labels as GraphQL takes them: a list of pairs. */
export const labelList = (labels: Record<string, string> | undefined) =>
  labels === undefined ? undefined : Object.entries(labels).map(([key, value]) => ({ key, value }));
// The service's roles, resources and actions may be newer than ours: they are checked as text, not by name.
const asRawKey = (key: v.InferOutput<typeof RawKeySchema>) => key as RawKey;
export const ListSchema = v.object({ apiKeys: v.array(v.pipe(RawKeySchema, v.transform(asRawKey))) });
export const UpdateSchema = v.object({ apiKey: v.object({ update: v.pipe(RawKeySchema, v.transform(asRawKey)) }) });
export const CreateSchema = v.object({ apiKey: v.object({ create: v.object({ ...RawKeySchema.entries, key: ServerText }) }) });
export const RotateSchema = v.object({
  apiKey: v.object({ rotate: v.object({ ...RawKeySchema.entries, key: ServerText }) }),
});
export const DeleteExpiredSchema = v.object({ apiKey: v.object({ deleteExpired: v.array(v.pipe(RawKeySchema, v.transform(asRawKey))) }) });

/** Who made a change; a kind this client does not know is refused as a wrong shape. */
const ActorSchema = v.variant("kind", [
  v.object({ kind: v.literal("local"), user: ServerText, host: ServerText }),
  v.object({ kind: v.literal("key"), id: ServerText, name: ServerText }),
]);
const EventSchema = v.object({
  at: ServerTime,
  // A newer service may know more actions: checked as text, like roles.
  action: ServerText,
  id: ServerText,
  name: ServerText,
  actor: ActorSchema,
  changed: v.nullish(v.array(ServerText)),
  replaced: v.nullish(ServerText),
});
/** A page of `auditTrail`; its cursor is the service's own text, passed back as it came. */
export const AuditTrailSchema = v.object({
  auditTrail: v.object({ events: v.array(EventSchema), cursor: v.nullable(v.pipe(v.string(), v.maxLength(200))) }),
});

/** The store's shape, field order included (GraphQL gives `null` for absent fields; the store leaves them out). */
export function toInfo({ id, name, description, roles, permissions, createdAt, expiresAt, lastUsedAt, graceUntil, retiringUntil, labels, disabled, disabledReason, rateLimits, credits, allowFrom }: RawKey): ApiKeyInfo {
  return {
    id,
    name,
    ...(description ? { description } : {}),
    roles,
    permissions,
    createdAt,
    ...(expiresAt ? { expiresAt } : {}),
    ...(lastUsedAt ? { lastUsedAt } : {}),
    ...(graceUntil ? { graceUntil } : {}),
    ...(retiringUntil ? { retiringUntil } : {}),
    ...(labels?.length ? { labels: Object.fromEntries(labels.map(({ key, value }) => [key, value])) } : {}),
    ...(disabled ? { disabled: true as const, ...(disabledReason ? { disabledReason } : {}) } : {}),
    ...(rateLimits?.length ? { rateLimits } : {}),
    ...(credits ? { credits } : {}),
    ...(allowFrom?.length ? { allowFrom } : {}),
  };
}

/** An event in the store's shape: no null fields. */
export function toEvent({ at, action, id, name, actor, changed, replaced }: v.InferOutput<typeof EventSchema>): AuditEvent {
  return {
    at,
    action: action as AuditAction,
    id,
    name,
    actor: actor as Actor,
    ...(changed ? { changed } : {}),
    ...(replaced ? { replaced } : {}),
  };
}
