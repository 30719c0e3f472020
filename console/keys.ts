// The keys table: name, grants, expiry, last use, state; a page at a time from the service, filtered by the
// service (`apiKeys(filter:)`), the rows loaded sortable by each column.
import type { ApiKey } from "./api.ts";
import { field, h, message, replace, when } from "./dom.ts";
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

/** Keys a page: the table asks the service for this many at a time (`apiKeys(first:, after:)`). */
export const PAGE = 50;

/** One page of keys, each with its `cursor`: those matching `filter` (the service's syntax), after `after`. */
export type PageLoader = (filter: string, after: string | undefined) => Promise<ApiKey[]>;

/**
 * The table, its filter box and its **Load more keys** button; `reload()` asks for the first page again.
 * Rows come in the service's order (oldest first), a page at a time; the filter is the service's
 * `apiKeys(filter:)`, so it finds keys not loaded yet. A column's sort orders the rows loaded so far.
 */
export function keysTable(actions: RowActions, load: PageLoader): { element: HTMLElement; reload(): Promise<void> } {
  let keys: ApiKey[] = [];
  let more = false;
  let sortBy = -1; // -1: as the service lists them
  let ascending = true;
  let asked = 0; // the latest request: an answer to an older one (the filter typed on) is dropped
  let typing: ReturnType<typeof setTimeout> | undefined;
  const filter = h("input", { type: "search", autocomplete: "off", placeholder: "name, role:ADMIN, state:expired, label:env=prod" });
  const count = h("p", { class: "hint", role: "status" });
  const problem = h("div");
  const next = h("button", { type: "button", class: "secondary", hidden: true, onclick: () => void fetch(true) },
    "Load more", h("span", { class: "visually-hidden" }, " keys"));
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
    const shown = [...keys];
    const sort = COLUMNS[sortBy]?.sort;
    if (sort) {
      shown.sort((a, b) => {
        const x = sort(a), y = sort(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
      });
    }
    replace(body, ...shown.map((key) => row(key, actions)));
    count.textContent = `${keys.length} ${filter.value.trim() ? "matching " : ""}key${keys.length === 1 ? "" : "s"} shown${more ? ", more to load" : ""}`;
    next.hidden = !more;
  };

  const fetch = async (append: boolean) => {
    const mine = append ? asked : ++asked;
    next.disabled = true;
    try {
      const page = await load(filter.value.trim(), append ? keys.at(-1)?.cursor : undefined);
      if (mine !== asked) return;
      keys = append ? [...keys, ...page] : page;
      more = page.length === PAGE;
      replace(problem);
    } catch (error) {
      if (mine !== asked) return;
      if (!append) keys = [], more = false;
      replace(problem, message("error", (error as Error).message)); // a mistyped filter says how to fix it
    } finally {
      next.disabled = false;
    }
    render();
  };
  filter.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => void fetch(false), 250);
  });
  const element = h("section", { class: "keys-screen", "aria-label": "Keys" },
    h("h2", {}, "Keys"),
    field("Filter keys", filter, "Words: a part of the name, role:ADMIN, state:expired, label:env=prod"),
    problem,
    count,
    h("div", { class: "table-wrap" }, table),
    next);
  return { element, reload: () => fetch(false) };
}

function row(key: ApiKey, actions: RowActions): HTMLTableRowElement {
  const state = stateOf(key);
  const label = (verb: string) => h("span", {}, verb, h("span", { class: "visually-hidden" }, ` ${key.name}`));
  return h("tr", {},
    h("th", { scope: "row", "data-label": "Name" }, h("span", { class: "name" }, key.name), key.description ? h("span", { class: "description" }, key.description) : null,
      key.allowFrom?.length ? h("span", { class: "allow-from" }, `only from ${key.allowFrom.join(", ")}`) : null),
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
