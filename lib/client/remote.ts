/**
 * Remote mode of `service-api apikey`: the `KeyBackend` the command runs on, implemented over a
 * running service's GraphQL API. The command's flow and formatter are the same as in local mode,
 * so output and exit statuses are too; the service's error codes come back as `ServiceError` codes.
 */
import type { KeyBackend, KeyStore } from "../store/key-store.ts";

/** The store's methods a remote service offers: the command's, and `update`. */
export type RemoteBackend = KeyBackend & Pick<KeyStore, "update">;
import type { ApiKeyInfo, CreatedKey } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { type Client, ClientError, createClient } from "./client.ts";
import * as v from "valibot";
import { ServerText, untrustedText } from "./_untrusted.ts";

const FIELDS = "id name description roles createdAt permissions { resource actions }";

/** A key as the service sends it; every string is escaped for the terminal (lib/client/_untrusted.ts). */
const RawKeySchema = v.object({
  id: ServerText,
  name: ServerText,
  description: v.nullish(ServerText),
  roles: v.array(ServerText),
  createdAt: ServerText,
  permissions: v.array(v.object({ resource: ServerText, actions: v.array(ServerText) })),
});
type RawKey = Omit<ApiKeyInfo, "description"> & { description?: string | null };
// The service's roles, resources and actions may be newer than ours: they are checked as text, not by name.
const asRawKey = (key: v.InferOutput<typeof RawKeySchema>) => key as RawKey;
const ListSchema = v.object({ apiKeys: v.array(v.pipe(RawKeySchema, v.transform(asRawKey))) });
const UpdateSchema = v.object({ apiKey: v.object({ update: v.pipe(RawKeySchema, v.transform(asRawKey)) }) });
const CreateSchema = v.object({
  apiKey: v.object({ create: v.object({ ...RawKeySchema.entries, key: ServerText }) }),
});

/** The store's shape, field order included (GraphQL gives `description: null`; the store leaves it out). */
function toInfo({ id, name, description, roles, permissions, createdAt }: RawKey): ApiKeyInfo {
  return { id, name, ...(description ? { description } : {}), roles, permissions, createdAt };
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
  const getByName = async (name: string) => (await list()).find((k) => k.name === name) ?? null;

  return {
    list,
    getByName,
    isEmpty: async () => (await list()).length === 0,

    async create(input, { overwrite = false } = {}): Promise<CreatedKey> {
      const data = await client.request(
        `mutation ($input: CreateApiKeyInput!) { apiKey { create(input: $input) { ${FIELDS} key } } }`,
        {
          input: {
            name: input.name,
            description: input.description,
            roles: input.roles,
            permissions: input.permissions,
            overwrite,
          },
        },
        CreateSchema,
      );
      const created = data.apiKey.create;
      return { ...toInfo(created as RawKey), key: created.key };
    },

    async update(id, patch) {
      const data = await client.request(
        `mutation ($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { ${FIELDS} } } }`,
        { input: { id, ...patch } },
        UpdateSchema,
      );
      return toInfo(data.apiKey.update);
    },

    async deleteById(id) {
      const found = (await list()).find((k) => k.id === id);
      if (!found) return null;
      try {
        await client.request(`mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, { ids: [id] });
      } catch (error) {
        if (error instanceof ClientError && error.code === "NOT_FOUND") return null;
        throw error;
      }
      return found;
    },

    // Until the service offers these (issue 14, in progress): said plainly, never a silent no-op.
    deleteExpired: async () => {
      throw new ServiceError("USAGE", "--delete --expired is not available with --url yet");
    },
    audit: async () => {
      throw new ServiceError("USAGE", "--audit is not available with --url yet");
    },

    async deleteByName(name) {
      const found = await getByName(name);
      if (!found) return null;
      try {
        await client.request(`mutation ($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, {
          ids: [found.id],
        });
      } catch (error) {
        // Someone else deleted it between our lookup and our delete: nothing deleted by us.
        if (error instanceof ClientError && error.code === "NOT_FOUND") return null;
        throw error;
      }
      return found;
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
