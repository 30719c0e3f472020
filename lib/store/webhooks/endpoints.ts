/**
 * Webhook endpoints, kept in the key store's storage beside the keys:
 *
 *   webhooks:<id>        the endpoint: URL, event types, description, state, its sealed signing secrets
 *   meta:webhook-ids     the ids of the endpoints, changed under a lock: the worker lists them every second,
 *                        and a listing by prefix would scan the whole Redis keyspace
 *   webhook-state:<id>   its delivery state (cursor, retry, last attempts), written by the lease holder only
 *   leases:webhook:<id>  which server delivers its messages now (./lease.ts)
 *
 * The signing secret is returned once, by `add` (and `rotateSecret`), and kept sealed (./secret-box.ts).
 */
import type { Storage } from "unstorage";
import { ServiceError } from "../../core/errors.ts";
import { guard } from "../_guard.ts";
import { checkEndpointUrl } from "../../core/webhook-target.ts";
import { newSigningSecret } from "../../core/webhook-signature.ts";
import type { AtomicIndex } from "../atomic.ts";
import { createLease, type Lease } from "./lease.ts";
import { createSecretBox } from "./secret-box.ts";
import type { WebhookEventType } from "./events.ts";
import { emptyState, type DeliveryState } from "./state.ts";

/** An endpoint as it is shown: never its secret. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  /** The event types it receives; empty: all. */
  events: WebhookEventType[];
  description?: string;
  createdAt: string;
  /** Whether it may be sent to private addresses (see core/webhook-target.ts). */
  allowPrivate?: boolean;
  disabled?: boolean;
  disabledReason?: string;
  /** How long before a key's expiry `key.expiring` is sent (default 7 days). */
  notifyBeforeMs?: number;
}

interface StoredEndpoint extends WebhookEndpoint {
  /** Sealed signing secrets, the current one first; an older one signs too until its `until` (ms). */
  secrets: { sealed: string; until?: number }[];
}

export interface EndpointInput {
  url: string;
  events?: WebhookEventType[];
  description?: string;
  allowPrivate?: boolean;
  notifyBeforeMs?: number;
}

export interface EndpointPatch extends Partial<EndpointInput> {
  disabled?: boolean;
  disabledReason?: string;
}

export interface WebhookStore {
  /** Adds an endpoint; returns it with its signing secret, the only time the secret is available. */
  add(input: EndpointInput): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  list(): Promise<WebhookEndpoint[]>;
  get(id: string): Promise<WebhookEndpoint | null>;
  update(id: string, patch: EndpointPatch): Promise<WebhookEndpoint>;
  /** Removes an endpoint and its delivery state; returns it, or null when there is none. */
  remove(id: string): Promise<WebhookEndpoint | null>;
  /**
   * Gives the endpoint a new signing secret, returned once; the old one keeps signing too for `graceMs`
   * (default 24 h, at most 7 days; 0: it stops at once), so receivers can switch without a gap.
   */
  rotateSecret(id: string, graceMs?: number): Promise<{ endpoint: WebhookEndpoint; secret: string; oldUntil?: string }>;
  /** The secrets that sign its messages now (during a rotation's grace period, two). */
  signingSecrets(id: string): Promise<string[]>;
  state(id: string): Promise<DeliveryState>;
  saveState(id: string, state: DeliveryState): Promise<void>;
  lease: Lease;
}

const ID = /^wh_[0-9a-f]{32}$/;
const DEFAULT_GRACE_MS = 24 * 3_600_000;
const MAX_GRACE_MS = 7 * 24 * 3_600_000;
const MAX_DESCRIPTION = 1_000;

const publicOf = ({ secrets: _, ...endpoint }: StoredEndpoint): WebhookEndpoint => endpoint;

function checkNotifyBefore(ms: number): number {
  if (!(Number.isInteger(ms) && ms > 0 && ms <= 365 * 24 * 3_600_000)) throw new ServiceError("INVALID_INPUT", "--notify-before is a duration of at most 365d");
  return ms;
}

function checkDescription(text: string | undefined): string | undefined {
  const value = text?.trim();
  if (value && value.length > MAX_DESCRIPTION) throw new ServiceError("INVALID_INPUT", `Description is too long: at most ${MAX_DESCRIPTION} characters`);
  return value || undefined;
}

/** The webhook endpoints of the store on `storage`. */
export function createWebhookStore(storage: Storage, atomic: AtomicIndex, now: () => number = Date.now): WebhookStore {
  const box = createSecretBox(storage, atomic);
  const read = async (id: string): Promise<StoredEndpoint | null> =>
    ID.test(id) ? ((await storage.getItem(`webhooks:${id}`)) as StoredEndpoint | null) : null;
  const INDEX = "meta:webhook-ids";
  const ids = async (): Promise<string[]> => {
    const kept = await storage.getItem(INDEX);
    return Array.isArray(kept) ? kept.filter((id): id is string => typeof id === "string" && ID.test(id)) : [];
  };
  const editIndex = (edit: (ids: string[]) => string[]) => atomic.exclusive(INDEX, async () => void (await storage.setItem(INDEX, edit(await ids()) as never)));
  /** One change of endpoint `id` at a time (the worker disabling it, a rotation, a removal), each on what the last left. */
  const locked = <T>(id: string, change: () => Promise<T>) => atomic.exclusive(`webhooks:${id}`, change);
  const must = async (id: string) => {
    const found = await read(id);
    if (!found) throw new ServiceError("NOT_FOUND", `No webhook endpoint with id ${id}`);
    return found;
  };
  return guarded({
    async add(input) {
      const allowPrivate = input.allowPrivate || undefined;
      const url = checkEndpointUrl(input.url, { allowPrivate });
      const secret = newSigningSecret();
      const id = `wh_${crypto.randomUUID().replaceAll("-", "")}`;
      const endpoint: StoredEndpoint = {
        id, url, events: input.events ?? [], createdAt: new Date(now()).toISOString(),
        ...(checkDescription(input.description) ? { description: checkDescription(input.description) } : {}),
        ...(allowPrivate ? { allowPrivate } : {}),
        ...(input.notifyBeforeMs !== undefined ? { notifyBeforeMs: checkNotifyBefore(input.notifyBeforeMs) } : {}),
        secrets: [{ sealed: await box.seal(secret) }],
      };
      await storage.setItem(`webhooks:${id}`, endpoint as never);
      await editIndex((all) => [...all, id]); // the commit point: listed from here on
      return { endpoint: publicOf(endpoint), secret };
    },
    async list() {
      const found = await Promise.all((await ids()).map(read));
      return found.filter((e): e is StoredEndpoint => e !== null).map(publicOf).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    },
    get: async (id) => {
      const found = await read(id);
      return found && publicOf(found);
    },
    update: (id, patch) => locked(id, async () => {
      const found = await must(id);
      const allowPrivate = patch.allowPrivate ?? found.allowPrivate;
      const next: StoredEndpoint = {
        ...found,
        ...(patch.url !== undefined || patch.allowPrivate !== undefined ? { url: checkEndpointUrl(patch.url ?? found.url, { allowPrivate }) } : {}),
        ...(patch.events !== undefined ? { events: patch.events } : {}),
        ...(patch.notifyBeforeMs !== undefined ? { notifyBeforeMs: checkNotifyBefore(patch.notifyBeforeMs) } : {}),
        ...(patch.description !== undefined ? { description: checkDescription(patch.description) } : {}),
        ...(allowPrivate ? { allowPrivate: true } : { allowPrivate: undefined }),
        ...(patch.disabled !== undefined ? { disabled: patch.disabled || undefined, disabledReason: patch.disabled ? patch.disabledReason : undefined } : {}),
      };
      await storage.setItem(`webhooks:${id}`, JSON.parse(JSON.stringify(next)));
      return publicOf(next);
    }),
    remove: (id) => locked(id, async () => {
      const found = await read(id);
      if (!found) return null;
      await editIndex((all) => all.filter((other) => other !== id));
      await storage.removeItem(`webhooks:${id}`);
      await storage.removeItem(`webhook-state:${id}`);
      return publicOf(found);
    }),
    rotateSecret: (id, graceMs = DEFAULT_GRACE_MS) => locked(id, async () => {
      if (!(graceMs >= 0 && graceMs <= MAX_GRACE_MS)) throw new ServiceError("INVALID_INPUT", "The grace period of a signing secret is at most 7 days");
      const found = await must(id);
      const secret = newSigningSecret();
      const until = now() + graceMs;
      const old = graceMs > 0 ? [{ sealed: found.secrets[0].sealed, until }] : [];
      await storage.setItem(`webhooks:${id}`, { ...found, secrets: [{ sealed: await box.seal(secret) }, ...old] } as never);
      return { endpoint: publicOf(found), secret, ...(old.length ? { oldUntil: new Date(until).toISOString() } : {}) };
    }),
    async signingSecrets(id) {
      const { secrets } = await must(id);
      const live = secrets.filter((s, i) => i === 0 || (s.until ?? 0) > now());
      return await Promise.all(live.map((s) => box.open(s.sealed)));
    },
    async state(id) {
      const kept = (await storage.getItem(`webhook-state:${id}`)) as DeliveryState | null;
      if (kept && typeof kept === "object" && kept.cursor) return kept;
      const found = await read(id);
      return emptyState(found ? Date.parse(found.createdAt) : now());
    },
    saveState: (id, state) => storage.setItem(`webhook-state:${id}`, state as never),
    lease: createLease(atomic, (key) => storage.getItem(key), now),
  });
}

/** `hooks` with what each method throws reported as the store's errors are (STORE_UNAVAILABLE naming what failed). */
function guarded(hooks: WebhookStore): WebhookStore {
  const wrap = <A extends unknown[], R>(what: string, fn: (...args: A) => Promise<R>) => (...args: A) => guard(what, () => fn(...args));
  return {
    add: wrap("add a webhook endpoint", hooks.add),
    list: wrap("list the webhook endpoints", hooks.list),
    get: wrap("read a webhook endpoint", hooks.get),
    update: wrap("update a webhook endpoint", hooks.update),
    remove: wrap("remove a webhook endpoint", hooks.remove),
    rotateSecret: wrap("rotate a webhook endpoint's secret", hooks.rotateSecret),
    signingSecrets: wrap("read a webhook endpoint's secrets", hooks.signingSecrets),
    state: wrap("read a webhook endpoint's deliveries", hooks.state),
    saveState: wrap("record a webhook endpoint's deliveries", hooks.saveState),
    lease: hooks.lease,
  };
}
