// The console's one way to the service: POST /graphql with `Authorization: Bearer <key>`, to the page's own
// origin. The key lives in this tab's sessionStorage (see `session`), never in a cookie or localStorage.

/** Where GraphQL is, relative to the page (/console or /authorize): the same origin, any path prefix kept. */
const ENDPOINT = new URL("graphql", location.href).pathname;
const STORAGE = "service-api.console.key";

/** A GraphQL error as the service reports it: the message and its `extensions.code`. */
export class ApiError extends Error {
  code: string;
  status: number;
  constructor(message: string, code: string, status: number) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

/**
 * The signed-in key. sessionStorage, not memory alone: a reload, or going from /console to /authorize in the
 * same tab, keeps the session; it stays in this tab (a new tab signs in again), ends when the tab closes, and,
 * unlike a cookie, is never sent by the browser on its own.
 */
export const session = {
  get(): string {
    try {
      return sessionStorage.getItem(STORAGE) ?? "";
    } catch {
      return memory;
    }
  },
  set(key: string): void {
    memory = key;
    try {
      if (key) sessionStorage.setItem(STORAGE, key);
      else sessionStorage.removeItem(STORAGE);
    } catch {}
  },
};
let memory = "";

type Data = Record<string, any>;

/** Runs one operation; resolves with `data`, or rejects with the first error (partial data is refused). */
export async function gql<T = Data>(query: string, variables: Data = {}, key = session.get()): Promise<T> {
  let response: Response;
  try {
    response = await fetch(ENDPOINT, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new ApiError("The service did not answer: is it still running?", "NETWORK", 0);
  }
  let body: { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`The service answered HTTP ${response.status} without JSON`, "HTTP", response.status);
  }
  const first = body.errors?.[0];
  if (first) throw new ApiError(first.message, first.extensions?.code ?? "ERROR", response.status);
  return body.data as T;
}

export interface Permission {
  resource: string;
  actions: string[];
}
export interface ApiKey {
  id: string;
  name: string;
  description: string | null;
  roles: string[];
  permissions: Permission[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  graceUntil: string | null;
  /** Absent on a service without disable (the console then never shows the state). */
  disabled?: boolean;
  /** The key's IP allow-list as CIDR blocks; [] for any address. */
  allowFrom?: string[];
  key?: string | null;
  /** Where the next page starts (asked for by the keys table only). */
  cursor?: string;
}
export const KEY_FIELDS = "id name description roles permissions { resource actions } createdAt expiresAt lastUsedAt graceUntil disabled allowFrom";

/** What the service offers beyond the base schema, found by introspection: presets and rotation. */
export interface Capabilities {
  /** The fields of a preset that the console can use, or null when the service has no `apiKeyPresets`. */
  presetFields: string[] | null;
  rotate: boolean;
}

const PRESET_FIELDS = ["id", "name", "description", "roles", "permissions"];

/** Asks the schema whether `apiKeyPresets` and `apiKey { rotate }` exist; missing ones are turned off. */
export async function capabilities(): Promise<Capabilities> {
  const data = await gql<Data>(`{
    q: __type(name: "Query") { fields { name type { name kind ofType { name kind ofType { name kind ofType { name } } } } } }
    m: __type(name: "ApiKeyMutations") { fields { name } }
  }`).catch(() => null);
  const rotate = !!data?.m?.fields?.some((f: Data) => f.name === "rotate");
  const preset = data?.q?.fields?.find((f: Data) => f.name === "apiKeyPresets");
  if (!preset) return { presetFields: null, rotate };
  let type = preset.type;
  while (type && !type.name) type = type.ofType;
  const fields = type?.name ? await gql<Data>(`query($n: String!) { __type(name: $n) { fields { name } } }`, { n: type.name }).catch(() => null) : null;
  const names: string[] = fields?.__type?.fields?.map((f: Data) => f.name) ?? [];
  const usable = PRESET_FIELDS.filter((name) => names.includes(name));
  return { presetFields: usable.includes("name") ? usable : null, rotate };
}
