// The web console's entry (bundled by scripts/console-build.mjs into dist/console/). One page serves two
// paths: /authorize is the consent page apps send people to (authorize.ts); anything else is the console.
// Everything goes through POST /graphql with the signed-in key; text from the service is only ever text.
import { type ApiKey, ApiError, type Capabilities, capabilities, gql, KEY_FIELDS, session } from "./api.ts";
import { h, message, replace } from "./dom.ts";
import { keysTable, PAGE } from "./keys.ts";
import { keyForm, type Preset } from "./key-form.ts";
import { confirmDelete, confirmRotate } from "./actions.ts";
import { auditScreen } from "./audit.ts";
import { secretPanel } from "./secret.ts";
import { type Me, signInForm, whoAmI } from "./signin.ts";
import { authorizePage } from "./authorize.ts";
import { templateHref } from "./scopes.ts";
import "./app.css";

const root = document.getElementById("root")!;

/**
 * The console needs API_KEY:READ_ANY to list keys: who `key` is, and what it lacks (null: nothing). The one
 * check for a key pasted here and for one the tab already holds (signed in at /authorize, which asks less).
 */
async function consoleAccess(key: string): Promise<{ me: Me | null; problem: string | null }> {
  const me = await whoAmI(key);
  try {
    await gql(`{ apiKeys(first: 1) { id } }`, {}, key);
    return { me, problem: null };
  } catch (error) {
    if ((error as ApiError).code !== "FORBIDDEN") throw error;
    const who = me ? `The key ${me.name}` : "This key";
    const problem = `${who} lacks the permission API_KEY:READ_ANY, which the console needs to list keys. Sign in with a key that holds it (the ADMIN role does).`;
    return { me, problem };
  }
}

/** The sign-in form, with why the key the tab held was not kept, if it was not. */
function signIn(problem?: string): void {
  const intro = "Paste an API key that may read keys (API_KEY:READ_ANY).";
  const form = signInForm(intro, async (key) => (await consoleAccess(key)).problem, start);
  replace(root, header(null), h("main", {}, problem ? message("error", problem) : null, form));
}

function header(name: string | null, nav?: HTMLElement): HTMLElement {
  return h("header", { class: "top" },
    h("h1", {}, "service-api console"),
    name !== null && h("p", { class: "who" }, "Signed in as ", h("strong", {}, name)),
    nav,
    name !== null && h("button", { type: "button", class: "secondary", onclick: () => (session.set(""), signIn()) }, "Sign out"));
}

async function start(): Promise<void> {
  const access = await consoleAccess(session.get()).catch(() => undefined);
  if (access === undefined) return signIn(); // the stored key no longer works
  // A key kept by /authorize (any working key signs in there) is held to the console's own rule: told, not kept.
  if (access.problem) return session.set(""), signIn(access.problem);
  const { me } = access;
  const caps = await capabilities();
  const presets = caps.presetFields ? await loadPresets(caps) : null;
  shell(me?.name ?? "a key that may not read itself", caps, presets);
}

async function loadPresets(caps: Capabilities): Promise<Preset[] | null> {
  const fields = caps.presetFields!.map((f) => (f === "permissions" ? "permissions { resource actions }" : f)).join(" ");
  return (await gql<{ apiKeyPresets: Preset[] }>(`{ apiKeyPresets { ${fields} } }`).catch(() => null))?.apiKeyPresets ?? null;
}

const PAGE_QUERY = `query($first: Int, $after: String, $filter: String) {
  apiKeys(first: $first, after: $after, filter: $filter) { ${KEY_FIELDS} cursor }
}`;

type Screen = "keys" | "create" | "audit";

function shell(name: string, caps: Capabilities, presets: Preset[] | null): void {
  const area = h("div", { class: "screen" });
  const notice = h("div", { class: "notice" });
  const tabs: Record<Screen, HTMLButtonElement> = {
    keys: h("button", { type: "button", onclick: () => go("keys") }, "Keys"),
    create: h("button", { type: "button", onclick: () => go("create") }, "New key"),
    audit: h("button", { type: "button", onclick: () => go("audit") }, "Audit trail"),
  };
  const nav = h("nav", { "aria-label": "Console" }, ...Object.values(tabs));
  const table = keysTable({
    edit: (key) => replace(area, keyForm({ key, onSaved: (saved) => (go("keys"), say(`Saved ${saved.name}.`)), onCancel: () => go("keys") })),
    rotate: (key) => confirmRotate(key, caps.rotate, (rotated) => reveal(rotated)),
    remove: (key) => confirmDelete(key, () => (go("keys"), say(`Deleted ${key.name}.`))),
    template: (key) => {
      const href = templateHref(location.href, key);
      replace(notice, h("p", { class: "msg status", role: "status" }, `Template link for ${key.name} (its grants, no secret): `, h("a", { href, class: "template-link" }, href)));
      navigator.clipboard?.writeText(href).then(() => notice.append(h("p", { class: "msg status" }, "Copied to the clipboard.")), () => {});
    },
  }, async (filter, after) => (await gql<{ apiKeys: ApiKey[] }>(PAGE_QUERY, { first: PAGE, after, filter: filter || undefined })).apiKeys);
  const audit = auditScreen();
  const say = (text: string) => replace(notice, message("status", text));
  const reveal = (key: ApiKey) => {
    replace(notice, secretPanel(key.name, key.key ?? "", () => replace(notice)));
    go("keys", false);
  };
  const go = (screen: Screen, clear = true) => {
    for (const [id, tab] of Object.entries(tabs)) tab.setAttribute("aria-current", String(id === screen));
    if (clear && notice.querySelector(".secret-panel") === null) replace(notice);
    if (screen === "keys") replace(area, table.element), table.reload();
    if (screen === "create") replace(area, keyForm({ presets, onSaved: reveal, onCancel: () => go("keys") }));
    if (screen === "audit") replace(area, audit.element), audit.load();
  };
  replace(root, header(name, nav), h("main", {}, notice, area));
  go("keys");
}

if (location.pathname.endsWith("/authorize")) {
  const main = h("main");
  replace(root, main);
  authorizePage(main);
} else if (session.get()) start().catch(() => signIn());
else signIn();
