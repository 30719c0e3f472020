/**
 * The remote backend's key methods, over the service's GraphQL API: the lookups and deletes (by a listing
 * of `apiKeys`, as the service deletes by id), and the changes (create, rotate, update, deleteExpired),
 * each one mutation. The service records the calling key as the actor of every change.
 */
import type { ApiKeyInfo, CreatedKey } from "../core/model.ts";
import type { KeyStore } from "../store/key-store.ts";
import { type Client, ClientError } from "./client.ts";
import {
  CreateSchema,
  DeleteExpiredSchema,
  FIELDS,
  labelList,
  ListSchema,
  type RawKey,
  RotateSchema,
  toInfo,
  UpdateSchema,
} from "./_remote-shapes.ts";

/** Durations go to the service in whole seconds (45s, 30m, ...); a fraction is rounded up, never cut short. */
const graceSeconds = (graceMs: number | undefined) => (graceMs === undefined ? undefined : Math.ceil(graceMs / 1000));

/** `list`, `getByName`, `isEmpty` and the deletes by id and by name of a remote backend on `client`. */
export function remoteLookups(client: Client): Pick<KeyStore, "list" | "getByName" | "isEmpty" | "deleteById" | "deleteByName"> {
  const list = async (): Promise<ApiKeyInfo[]> => {
    const data = await client.request(`query { apiKeys { ${FIELDS} } }`, undefined, ListSchema);
    return data.apiKeys.map(toInfo);
  };
  // A name may be listed twice: its key, and the key it replaced while that is in its grace period.
  const named = async (name: string) => (await list()).filter((k) => k.name === name);
  const current = (keys: ApiKeyInfo[]) => keys.find((k) => !k.graceUntil) ?? null;
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
    list,
    getByName: async (name) => current(await named(name)),
    isEmpty: async () => (await list()).length === 0,

    async deleteById(id) {
      const found = (await list()).find((k) => k.id === id);
      return found && (await deleteOne(id)) ? found : null;
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

/** `create`, `rotate`, `update` and `deleteExpired` of a remote backend on `client`, one mutation each. */
export function remoteChanges(client: Client): Pick<KeyStore, "create" | "rotate" | "update" | "deleteExpired"> {
  return {
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
            rateLimits: input.rateLimits, credits: input.credits, allowFrom: input.allowFrom,
            graceSeconds: graceSeconds(graceMs),
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
        { id, grace: graceSeconds(graceMs) },
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

    async deleteExpired() {
      const data = await client.request(`mutation { apiKey { deleteExpired { ${FIELDS} } } }`, undefined, DeleteExpiredSchema);
      return data.apiKey.deleteExpired.map(toInfo);
    },
  };
}
