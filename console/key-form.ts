// Create and edit: name, description, roles, permissions, expiry, IP allow-list; presets when the service offers them.
import { type ApiKey, ApiError, gql, KEY_FIELDS, type Permission } from "./api.ts";
import { h, message, field, replace, uid } from "./dom.ts";
import { permissionPicker, rolePicker } from "./pickers.ts";

export interface Preset {
  id?: string;
  name: string;
  description?: string | null;
  roles?: string[];
  permissions?: Permission[];
}

interface FormOptions {
  /** The key to edit; absent: a new key. */
  key?: ApiKey;
  presets?: Preset[] | null;
  onSaved: (key: ApiKey) => void;
  onCancel?: () => void;
}

const CREATE = `mutation($input: CreateApiKeyInput!) { apiKey { create(input: $input) { ${KEY_FIELDS} key } } }`;
const UPDATE = `mutation($input: UpdateApiKeyInput!) { apiKey { update(input: $input) { ${KEY_FIELDS} } } }`;

/** A comma-separated list's entries, blanks dropped. */
const listOf = (text: string) => text.split(",").map((s) => s.trim()).filter(Boolean);

/** The expiry as the date input holds it (UTC date), or "". */
const dateOf = (iso: string | null | undefined) => (iso ? iso.slice(0, 10) : "");

/** The form; creating calls `create`, editing calls `update` with the fields changed. */
export function keyForm(options: FormOptions): HTMLFormElement {
  const current = options.key;
  const name = h("input", { type: "text", required: true, maxlength: "100", autocomplete: "off", value: current?.name ?? "" });
  const description = h("textarea", { rows: "2", maxlength: "500" });
  description.value = current?.description ?? "";
  const roles = rolePicker(current?.roles ?? []);
  const permissions = permissionPicker(current?.permissions ?? []);
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  const expires = h("input", { type: "date", min: tomorrow, value: dateOf(current?.expiresAt) });
  const allowFrom = h("input", { type: "text", autocomplete: "off", spellcheck: "false", value: (current?.allowFrom ?? []).join(", ") });
  const status = h("div", { class: "form-status" });
  const submit = h("button", { type: "submit" }, current ? "Save changes" : "Create key");
  const title = current ? `Edit ${current.name}` : "Create a key";

  const presetField = !current && options.presets?.length ? presetPicker(options.presets, (preset) => {
    if (preset.description != null) description.value = preset.description;
    roles.set(preset.roles ?? []);
    permissions.set(preset.permissions ?? []);
    if (!name.value) name.value = preset.name;
  }) : null;

  const form = h("form", { class: "key-form", "aria-label": title, novalidate: true },
    h("h2", {}, title),
    presetField,
    field("Name", name, "Letters, numbers and spaces, up to 100 characters; unique among the keys."),
    field("Description", description),
    roles.element,
    permissions.element,
    field("Expires on", expires, "Midnight UTC at the start of that day; leave empty for a key that never expires."),
    field("Allowed addresses", allowFrom, "IP addresses or CIDR blocks, comma-separated (10.0.0.0/8, 2001:db8::/32); the key is refused from elsewhere. Leave empty for any address."),
    h("div", { class: "buttons" }, submit, options.onCancel && h("button", { type: "button", class: "secondary", onclick: options.onCancel }, "Cancel")),
    status);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    replace(status, message("status", current ? "Saving…" : "Creating…"));
    try {
      const saved = current
        ? (await gql(UPDATE, { input: changes(current, name.value.trim(), description.value, roles.value(), permissions.value(), expires.value, listOf(allowFrom.value)) })).apiKey.update
        : (await gql(CREATE, { input: {
          name: name.value.trim(),
          description: description.value || null,
          roles: roles.value(),
          permissions: permissions.value(),
          expiresAt: expires.value || null,
          ...(listOf(allowFrom.value).length ? { allowFrom: listOf(allowFrom.value) } : {}),
        } })).apiKey.create;
      replace(status);
      options.onSaved(saved);
    } catch (error) {
      replace(status, message("error", (error as ApiError).message));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** The update input: the id, and each field that differs from the key as it was. */
function changes(key: ApiKey, name: string, description: string, roles: string[], permissions: Permission[], expires: string, allowFrom: string[]) {
  const input: Record<string, unknown> = { id: key.id, roles, permissions };
  if (allowFrom.join(",") !== (key.allowFrom ?? []).join(",")) input.allowFrom = allowFrom; // the service normalises and checks it
  if (name !== key.name) input.name = name;
  if (description !== (key.description ?? "")) input.description = description;
  if (expires !== dateOf(key.expiresAt)) input.expiresAt = expires || null;
  return input;
}

function presetPicker(presets: Preset[], apply: (preset: Preset) => void): HTMLElement {
  const select = h("select", { id: uid("preset") }, h("option", { value: "" }, "None"), ...presets.map((p, i) => h("option", { value: String(i) }, p.name)));
  select.addEventListener("change", () => {
    if (select.value !== "") apply(presets[Number(select.value)]);
  });
  return field("Preset", select, "Fills in the description, roles and permissions; change them as you like.");
}
