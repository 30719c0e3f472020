/**
 * Remote mode of `service-api apikey`: the `KeyBackend` the command runs on, implemented over a
 * running service's GraphQL API. The command's flow and formatter are the same as in local mode,
 * so output and exit statuses are too; the service's error codes come back as `ServiceError` codes.
 */
import type { KeyBackend, KeyStore } from "../store/key-store.ts";

/** The store's methods a remote service offers: the command's, `update` and `verifyDetailed`. */
export type RemoteBackend = KeyBackend & Pick<KeyStore, "update" | "verifyDetailed">;
import type { Actor, ApiKeyInfo, AuditAction, AuditEvent, CreatedKey } from "../core/model.ts";
import type { AuditQuery } from "../store/audit.ts";
import { ServiceError } from "../core/errors.ts";
import { type Client, ClientError, createClient } from "./client.ts";
import * as v from "valibot";
import { ServerText, untrustedText } from "./_untrusted.ts";
import { CreditsSchema, remoteUsage } from "./_usage.ts";

const FIELDS = "id name description roles createdAt permissions { resource actions } expiresAt lastUsedAt graceUntil labels { key value } disabled disabledReason rateLimits { limit durationMs } credits { remaining refill { amount interval } }";
const EVENT_FIELDS = "at action id name actor { kind user host id name } changed replaced";
/** Events asked for in one `auditLog` answer: about 250 KB of JSON, and 1.2 MB at most, well under the client's 4 MiB. */
const AUDIT_PAGE = 1_000;
/** Pages read at most: far past any trail the service keeps (a 20 MiB log, 100,000 Redis entries). */
const AUDIT_PAGES = 1_000;

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
  labels: v.nullish(v.array(v.object({ key: ServerText, value: ServerText }))),
  disabled: v.nullish(v.boolean()),
  disabledReason: v.nullish(ServerText),
  rateLimits: v.nullish(v.array(v.object({ limit: v.number(), durationMs: v.number() }))),
  credits: v.nullish(CreditsSchema),
});
type Nullable<T, K extends keyof T> = Omit<T, K> & { [P in K]?: T[P] | null };
type RawKey = Nullable<Omit<ApiKeyInfo, "labels" | "disabled">, "description" | "expiresAt" | "lastUsedAt" | "graceUntil" | "disabledReason" | "rateLimits" | "credits"> & {
  labels?: { key: string; value: string }[] | null;
  disabled?: boolean | null;
};
/** Labels as GraphQL takes them: a list of pairs. */
const labelList = (labels: Record<string, string> | undefined) =>
  labels === undefined ? undefined : Object.entries(labels).map(([key, value]) => ({ key, value }));
// The service's roles, resources and actions may be newer than ours: they are checked as text, not by name.
const asRawKey = (key: v.InferOutput<typeof RawKeySchema>) => key as RawKey;
const ListSchema = v.object({ apiKeys: v.array(v.pipe(RawKeySchema, v.transform(asRawKey))) });
const UpdateSchema = v.object({ apiKey: v.object({ update: v.pipe(RawKeySchema, v.transform(asRawKey)) }) });
const CreateSchema = v.object({ apiKey: v.object({ create: v.object({ ...RawKeySchema.entries, key: ServerText }) }) });
const RotateSchema = v.object({
  apiKey: v.object({ rotate: v.object({ ...RawKeySchema.entries, key: ServerText }) }),
});
const DeleteExpiredSchema = v.object({ apiKey: v.object({ deleteExpired: v.array(v.pipe(RawKeySchema, v.transform(asRawKey))) }) });

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
const AuditSchema = v.object({ auditLog: v.array(EventSchema) });

/** The store's shape, field order included (GraphQL gives `null` for absent fields; the store leaves them out). */
function toInfo({ id, name, description, roles, permissions, createdAt, expiresAt, lastUsedAt, graceUntil, labels, disabled, disabledReason, rateLimits, credits }: RawKey): ApiKeyInfo {
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
    ...(labels?.length ? { labels: Object.fromEntries(labels.map(({ key, value }) => [key, value])) } : {}),
    ...(disabled ? { disabled: true as const, ...(disabledReason ? { disabledReason } : {}) } : {}),
    ...(rateLimits?.length ? { rateLimits } : {}),
    ...(credits ? { credits } : {}),
  };
}

/** The error for `auditLog` pages that would never end. */
const wrongPages = (what: string) => new ServiceError("INTERNAL", `The service's audit trail came back with ${what}; stopped reading`);

/** An event in the store's shape: no null fields. */
function toEvent({ at, action, id, name, actor, changed, replaced }: v.InferOutput<typeof EventSchema>): AuditEvent {
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

export interface RemoteBackendOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3001`. */
  baseUrl: string;
  /** A key allowed to manage keys (ADMIN, or the API_KEY permissions needed). */
  apiKey: string;
  timeoutMs?: number;
}

/**
 * A key backend that acts on a running service.
 * @example await runApikey(flags, createRemoteBackend({ baseUrl, apiKey }), { interactive: false })
 */
export function createRemoteBackend(options: RemoteBackendOptions | { client: Client }): RemoteBackend {
  const client = "client" in options ? options.client : createClient(options);

  const list = async (): Promise<ApiKeyInfo[]> => {
    const data = await client.request(`query { apiKeys { ${FIELDS} } }`, undefined, ListSchema);
    return data.apiKeys.map(toInfo);
  };
  // A name may be listed twice: its key, and the key it replaced while that is in its grace period.
  const named = async (name: string) => (await list()).filter((k) => k.name === name);
  const current = (keys: ApiKeyInfo[]) => keys.find((k) => !k.graceUntil) ?? null;
  const getByName = async (name: string) => current(await named(name));
  const deleteOne = async (id: string): Promise<boolean> => {
    try {
      await client.request(`mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, { ids: [id] });
      return true;
    } catch (error) {
      // Someone else deleted it between our lookup and our delete: nothing deleted by us.
      if (error instanceof ClientError && error.code === "NOT_FOUND") return false;
      throw error;
    }
  };

  return {
    ...remoteUsage(client),
    list,
    getByName,
    isEmpty: async () => (await list()).length === 0,

    // The service records the calling key as the actor of every change; `options.actor` is not sent.
    async create(input, { overwrite = false, graceMs } = {}): Promise<CreatedKey> {
      const data = await client.request(
        `mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { ${FIELDS} key } } }`,
        {
          input: {
            name: input.name,
            description: input.description,
            roles: input.roles,
            permissions: input.permissions,
            overwrite,
            expiresAt: input.expiresAt,
            labels: labelList(input.labels),
            rateLimits: input.rateLimits, credits: input.credits,
            // Durations are whole seconds (45s, 30m, ...); a fraction is rounded up, never cut short.
            graceSeconds: graceMs === undefined ? undefined : Math.ceil(graceMs / 1000),
          },
        },
        CreateSchema,
      );
      const created = data.apiKey.create;
      return { ...toInfo(created as RawKey), key: created.key };
    },

    async rotate(id, { graceMs } = {}): Promise<CreatedKey> {
      const data = await client.request(
        `mutation ($id: PrefixedID!, $grace: Int) { apiKey { rotate(id: $id, graceSeconds: $grace) { ${FIELDS} key } } }`,
        // Whole seconds, a fraction rounded up (as for create).
        { id, grace: graceMs === undefined ? undefined : Math.ceil(graceMs / 1000) },
        RotateSchema,
      );
      const rotated = data.apiKey.rotate;
      return { ...toInfo(rotated as RawKey), key: rotated.key };
    },

    async update(id, patch) {
      const data = await client.request(
        `mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { ${FIELDS} } } }`,
        { input: { id, ...patch, labels: labelList(patch.labels) } },
        UpdateSchema,
      );
      return toInfo(data.apiKey.update);
    },

    async deleteById(id) {
      const found = (await list()).find((k) => k.id === id);
      return found && (await deleteOne(id)) ? found : null;
    },

    async deleteExpired() {
      const data = await client.request(`mutation { apiKey { deleteExpired { ${FIELDS} } } }`, undefined, DeleteExpiredSchema);
      return data.apiKey.deleteExpired.map(toInfo);
    },

    /** The service's trail, page by page from the newest back: what the same query lists locally. */
    async audit(query: AuditQuery = {}) {
      const wanted = query.limit ?? Infinity;
      const since = query.since === undefined ? undefined : new Date(query.since).toISOString();
      const events: AuditEvent[] = [];
      let pages = 0;
      /** How many of the events received share the oldest time, the first `n` of `events`. */
      const oldestShared = () => {
        let n = 0;
        while (n < events.length && Date.parse(events[n].at) === Date.parse(events[0].at)) n++;
        return n;
      };
      for (let before: number | undefined; events.length < wanted;) {
        // After the first page, `before` is just after the oldest time received, so that none of that time is
        // missed: the page then ends with the `have` events of that time received already.
        const have = before === Date.parse(events[0]?.at) + 1 ? oldestShared() : 0;
        const limit = Math.min(AUDIT_PAGE, wanted - events.length + have);
        const data = await client.request(
          `query ($since: String, $before: String, $limit: Int) { auditLog(since: $since, before: $before, limit: $limit) { ${EVENT_FIELDS} } }`,
          { since, before: before === undefined ? undefined : new Date(before).toISOString(), limit },
          AuditSchema,
        );
        const page = data.auditLog.map(toEvent);
        // Each page goes further back, so the listing ends: a service that answers otherwise is refused.
        if (before !== undefined && page.some((e) => !(Date.parse(e.at) < before!))) throw wrongPages("an event not before the time asked");
        if (++pages > AUDIT_PAGES) throw wrongPages(`over ${AUDIT_PAGES * AUDIT_PAGE} events; narrow the listing with --since or --limit`);
        let fresh = page.length;
        for (let n = 0; n < have && fresh > 0 && Date.parse(page[fresh - 1].at) === Date.parse(events[0].at); n++) fresh--;
        events.unshift(...page.slice(0, fresh));
        if (page.length < limit || fresh === 0 || events.length >= wanted) break;
        // A whole page of one millisecond could never move on: then go on strictly before it.
        const oldest = Date.parse(events[0].at);
        const next = oldestShared() < AUDIT_PAGE ? oldest + 1 : oldest;
        if (before !== undefined && next >= before) throw wrongPages("pages that do not go back in time");
        before = next;
      }
      return events.slice(Math.max(0, events.length - wanted));
    },

    // As locally: the key, and the key it replaced if still in its grace period (every secret of the name stops).
    async deleteByName(name) {
      const keys = await named(name);
      const live = current(keys);
      let deleted: ApiKeyInfo | null = null;
      for (const key of live ? [live, ...keys.filter((k) => k !== live)] : keys) {
        if ((await deleteOne(key.id)) && !deleted) deleted = key;
      }
      return deleted;
    },
  };
}

/**
 * The backend for `apikey --url <base_url>`: checks the URL and takes the key from `SERVICE_API_KEY`.
 * @example openRemoteBackend("http://127.0.0.1:3001", process.env)
 */
export function openRemoteBackend(url: string, env: Record<string, string | undefined>): RemoteBackend {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch { /* reported below */ }
  // Quoted with any credentials hidden (everything up to the last @), as for Redis URLs.
  const shown = untrustedText(url.replace(/\/\/.*@/s, "//***@"), 200);
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new ServiceError("USAGE", `Invalid --url '${shown}': give the service's base URL, for example http://127.0.0.1:3001`);
  }
  if (parsed.username || parsed.password) {
    // fetch refuses such URLs, and every message would then repeat the password.
    throw new ServiceError("USAGE", `Invalid --url '${shown}': no user or password in the URL; the key goes in SERVICE_API_KEY`);
  }
  const apiKey = env.SERVICE_API_KEY?.trim();
  if (!apiKey) {
    throw new ServiceError("USAGE", "Remote mode needs an API key: set SERVICE_API_KEY to a key with the ADMIN role");
  }
  return createRemoteBackend({ baseUrl: url, apiKey });
}
