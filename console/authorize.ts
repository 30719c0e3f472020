// The consent page (GET /authorize), compatible with Unraid's: an app sends the browser here with
// name, description, scopes, redirect_uri and state. The page shows exactly what the app would get; only a
// click on Authorize creates the key (through GraphQL, as the signed-in key), then sends the browser to
// redirect_uri?api_key=…&state=…; Deny sends it to redirect_uri?error=access_denied&state=…. A redirect_uri
// that is not https: (or http: to this machine) is refused here, and the browser is sent nowhere.
import { ApiError, gql, session } from "./api.ts";
import { h, message, field, replace } from "./dom.ts";
import { can, effectivePermissions, escalation } from "../lib/core/policy.ts";
import type { Permission, Role } from "../lib/core/model.ts";
import { checkRedirect, parseScopes, redirectTo } from "./scopes.ts";
import { type Me, signInForm, whoAmI } from "./signin.ts";
import { secretPanel } from "./secret.ts";

const CREATE = `mutation($input: CreateApiKeyInput!) { apiKey { create(input: $input) { id key } } }`;

/** Renders the consent page for this URL's parameters into `root`. */
export function authorizePage(root: HTMLElement): void {
  const params = new URLSearchParams(location.search);
  const app = params.get("name")?.trim() ?? "";
  const state = params.get("state");
  // Without redirect_uri the page is "create from template": the same grants, shown and created here.
  if (!params.get("redirect_uri")) return templatePage(root, params);
  const target = checkRedirect(params.get("redirect_uri"));
  const heading = h("h1", {}, app ? `Authorize ${app}` : "Authorize an app");
  document.title = `${heading.textContent} · service-api`;
  if ("problem" in target) {
    replace(root, heading, message("error", target.problem), h("p", {}, "Nothing was created and you were not sent anywhere. Tell the app's author; you can close this tab."));
    return;
  }
  const scopes = parseScopes(params.get("scopes") ?? "");
  const problems = [
    ...(app ? [] : ["The app gave no name."]),
    ...scopes.unknown.map((scope) => `Unknown scope "${scope}": the app asks for something this service does not have.`),
  ];
  const grants = { roles: scopes.roles as Role[], permissions: scopes.permissions as Permission[] };
  const effective = effectivePermissions(grants);
  const deny = h("button", { type: "button", class: "secondary", onclick: () => location.assign(redirectTo(target.url, { error: "access_denied" }, state)) }, "Deny");
  const description = params.get("description");

  replace(root, heading,
    h("p", {}, "The app ", h("strong", {}, app || "(no name)"), " asks for an API key of this service."),
    description ? h("p", { class: "description" }, description) : null,
    h("p", {}, "After you decide, your browser goes to ", h("code", {}, target.url.origin + target.url.pathname), "."),
    ...problems.map((problem) => message("error", problem)),
    grantsSection("Permissions requested", "It would get", scopes.roles, effective),
    consent(problems.length === 0, app, description || `Authorized for ${app}`, grants, target.url, state, deny));
}

/** Sign-in if needed, then the key name and the Authorize button; the key gets the app's description. */
function consent(valid: boolean, app: string, description: string, grants: { roles: Role[]; permissions: Permission[] }, url: URL, state: string | null, deny: HTMLElement): HTMLElement {
  const section = h("section", { class: "consent", "aria-label": "Consent" });
  if (!valid) {
    replace(section, message("warning", "This request cannot be authorized as it stands; you can only deny it."), h("div", { class: "buttons" }, deny));
    return section;
  }
  const show = (me: Me | null) => {
    const missing = me ? [...(can(me as never, "API_KEY", "CREATE_ANY") ? [] : ["API_KEY:CREATE_ANY"]), ...escalation(me as never, grants)] : [];
    const name = h("input", { type: "text", required: true, maxlength: "100", autocomplete: "off", value: app });
    const status = h("div");
    const approve = h("button", { type: "button", disabled: missing.length > 0 }, "Authorize");
    approve.addEventListener("click", async () => {
      approve.disabled = true;
      replace(status, message("status", "Creating the key…"));
      try {
        const data = await gql(CREATE, { input: { name: name.value.trim(), description, roles: grants.roles, permissions: grants.permissions } });
        location.assign(redirectTo(url, { api_key: data.apiKey.create.key }, state));
      } catch (error) {
        approve.disabled = false;
        replace(status, message("error", (error as ApiError).message));
      }
    });
    replace(section,
      h("p", {}, "Signed in as ", h("strong", {}, me?.name ?? "a key that may not read itself"), ". ",
        h("button", { type: "button", class: "link", onclick: () => (session.set(""), signIn()) }, "Sign out")),
      missing.length ? message("error", `Your key cannot grant this: it lacks ${missing.slice(0, 6).join(", ")}${missing.length > 6 ? ` and ${missing.length - 6} more` : ""}. Sign in with a key that holds them.`) : null,
      field("Key name", name, "The name the new key gets; it must not be taken."),
      h("div", { class: "buttons" }, approve, deny),
      status);
  };
  const signIn = () =>
    replace(section, signInForm("Sign in with a key that may create keys (API_KEY:CREATE_ANY) holding these permissions.", async (key) => {
      await whoAmI(key);
      return null;
    }, () => void whoAmI(session.get()).then(show, signIn)), h("div", { class: "buttons" }, deny));
  if (session.get()) whoAmI(session.get()).then(show, signIn);
  else signIn();
  return section;
}

/** "Create from template" (`/authorize` without redirect_uri): the grants shown, then a key created here. */
function templatePage(root: HTMLElement, params: URLSearchParams): void {
  const name = params.get("name")?.trim() ?? "";
  const scopes = parseScopes(params.get("scopes") ?? "");
  const heading = h("h1", {}, "Create a key from a template");
  document.title = `${heading.textContent} · service-api`;
  const grants = { roles: scopes.roles as Role[], permissions: scopes.permissions as Permission[] };
  const effective = effectivePermissions(grants);
  const problems = scopes.unknown.map((scope) => `Unknown scope "${scope}": this service does not have it.`);
  const section = h("section", { class: "consent", "aria-label": "Create" });
  const description = params.get("description") ?? "";
  const show = (me: Me | null) => {
    const missing = me ? [...(can(me as never, "API_KEY", "CREATE_ANY") ? [] : ["API_KEY:CREATE_ANY"]), ...escalation(me as never, grants)] : [];
    const input = h("input", { type: "text", required: true, maxlength: "100", autocomplete: "off", value: name });
    const status = h("div");
    const create = h("button", { type: "button", disabled: missing.length > 0 || problems.length > 0 }, "Create key");
    create.addEventListener("click", async () => {
      create.disabled = true;
      try {
        const data = await gql(CREATE, { input: { name: input.value.trim(), description: description || undefined, roles: grants.roles, permissions: grants.permissions } });
        replace(section, secretPanel(input.value.trim(), data.apiKey.create.key, () => replace(section, message("status", "Done."))));
      } catch (error) {
        create.disabled = false;
        replace(status, message("error", (error as ApiError).message));
      }
    });
    replace(section,
      missing.length ? message("error", `Your key cannot create this: it lacks ${missing.slice(0, 6).join(", ")}.`) : null,
      field("Key name", input, "It must not be taken."),
      h("div", { class: "buttons" }, create),
      status);
  };
  const signIn = () => replace(section, signInForm("Sign in with a key that may create keys (API_KEY:CREATE_ANY) holding these permissions.", async (key) => {
    await whoAmI(key);
    return null;
  }, () => void whoAmI(session.get()).then(show, signIn)));
  replace(root, heading,
    description ? h("p", { class: "description" }, description) : null,
    ...problems.map((problem) => message("error", problem)),
    grantsSection("Permissions", "The new key gets", scopes.roles, effective),
    section);
  if (session.get()) whoAmI(session.get()).then(show, signIn);
  else signIn();
}

/** The roles and the exact effective permissions a key would get, as the page shows them. */
function grantsSection(label: string, title: string, roles: readonly string[], effective: readonly { resource: string; actions: readonly string[] }[]): HTMLElement {
  return h("section", { "aria-label": label },
    h("h2", {}, title),
    roles.length ? h("p", {}, `Roles: ${roles.join(", ")}`) : null,
    effective.length
      ? h("ul", { class: "grants" }, ...effective.map((p) => h("li", {}, h("strong", {}, p.resource), `: ${p.actions.join(", ")}`)))
      : h("p", {}, "No permissions at all."));
}
