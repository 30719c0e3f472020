// The keys table: name, grants, expiry, last use, state; sortable by each column, filtered by a text box.
import type { ApiKey } from "./api.ts";
import { field, h, replace, when } from "./dom.ts";
import { grantsText } from "./pickers.ts";

export type KeyState = "active" | "grace" | "expired" | "disabled";

/** active, grace (a replaced secret still working), expired or disabled, as of `now`. */
export function stateOf(key: ApiKey, now = Date.now()): KeyState {
  if (key.disabled) return "disabled";
  if (key.graceUntil) return Date.parse(key.graceUntil) > now ? "grace" : "expired";
  return key.expiresAt && Date.parse(key.expiresAt) <= now ? "expired" : "active";
}

interface Column {
  label: string;
  sort: (key: ApiKey) => string | number;
}
const COLUMNS: Column[] = [
  { label: "Name", sort: (k) => k.name.toLowerCase() },
  { label: "Roles and permissions", sort: (k) => grantsText(k.roles, k.permissions) },
  { label: "Expires", sort: (k) => (k.expiresAt ? Date.parse(k.expiresAt) : Infinity) },
  { label: "Last used", sort: (k) => (k.lastUsedAt ? Date.parse(k.lastUsedAt) : 0) },
  { label: "State", sort: (k) => stateOf(k) },
];

export interface RowActions {
  edit(key: ApiKey): void;
  rotate(key: ApiKey): void;
  remove(key: ApiKey): void;
  /** A link that opens the create form filled in with this key's grants (no secret in it). */
  template(key: ApiKey): void;
}

/** The table and its filter box; call `show(keys)` with each fresh list. */
export function keysTable(actions: RowActions): { element: HTMLElement; show(keys: ApiKey[]): void } {
  let keys: ApiKey[] = [];
  let sortBy = 0;
  let ascending = true;
  const filter = h("input", { type: "search", autocomplete: "off", placeholder: "name, role, resource, state…" });
  const count = h("p", { class: "hint", role: "status" });
  const head = h("tr");
  const body = h("tbody");
  const table = h("table", { class: "keys" }, h("caption", { class: "visually-hidden" }, "API keys"), h("thead", {}, head), body);

  const render = () => {
    replace(head, ...COLUMNS.map((column, i) =>
      h("th", { scope: "col", "aria-sort": i === sortBy ? (ascending ? "ascending" : "descending") : "none" },
        h("button", { type: "button", class: "sort", onclick: () => {
          ascending = sortBy === i ? !ascending : true;
          sortBy = i;
          render();
        } }, column.label, h("span", { "aria-hidden": "true" }, i === sortBy ? (ascending ? " ▲" : " ▼") : "")))
    ), h("th", { scope: "col" }, "Actions"));
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const shown = keys.filter((key) => {
      const text = [key.name, key.description ?? "", grantsText(key.roles, key.permissions), stateOf(key)].join(" ").toLowerCase();
      return words.every((word) => text.includes(word));
    });
    const sort = COLUMNS[sortBy].sort;
    shown.sort((a, b) => {
      const x = sort(a), y = sort(b);
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    replace(body, ...shown.map((key) => row(key, actions)));
    count.textContent = `${shown.length} of ${keys.length} keys shown`;
  };
  filter.addEventListener("input", render);
  const element = h("section", { class: "keys-screen", "aria-label": "Keys" },
    h("h2", {}, "Keys"),
    field("Filter keys", filter),
    count,
    h("div", { class: "table-wrap" }, table));
  return { element, show: (list) => ((keys = list), render()) };
}

function row(key: ApiKey, actions: RowActions): HTMLTableRowElement {
  const state = stateOf(key);
  const label = (verb: string) => h("span", {}, verb, h("span", { class: "visually-hidden" }, ` ${key.name}`));
  return h("tr", {},
    h("th", { scope: "row", "data-label": "Name" }, h("span", { class: "name" }, key.name), key.description ? h("span", { class: "description" }, key.description) : null),
    h("td", { "data-label": "Roles and permissions" }, grantsText(key.roles, key.permissions)),
    h("td", { "data-label": "Expires" }, key.graceUntil ? `grace until ${when(key.graceUntil)}` : key.expiresAt ? when(key.expiresAt) : "never"),
    h("td", { "data-label": "Last used" }, key.lastUsedAt ? when(key.lastUsedAt) : "never"),
    h("td", { "data-label": "State" }, h("span", { class: `state ${state}` }, state)),
    h("td", { "data-label": "Actions", class: "row-actions" },
      h("button", { type: "button", class: "small secondary", onclick: () => actions.edit(key) }, label("Edit")),
      h("button", { type: "button", class: "small secondary", onclick: () => actions.rotate(key) }, label("Rotate")),
      h("button", { type: "button", class: "small secondary", onclick: () => actions.template(key) }, label("Template link")),
      h("button", { type: "button", class: "small danger", onclick: () => actions.remove(key) }, label("Delete"))));
}
