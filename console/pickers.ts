// The role and permission pickers shared by the create and edit forms. Every checkbox and select has a
// visible label; the permission picker is one resource at a time, so a keyboard user tabs through 8
// checkboxes, not 232.
import { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES } from "../lib/core/model.ts";
import type { Permission } from "./api.ts";
import { append, h, replace, uid } from "./dom.ts";

export interface Picker<T> {
  element: HTMLElement;
  value(): T;
  set(value: T): void;
}

/** Checkboxes, one per role, each labelled with the role and what it means. */
export function rolePicker(initial: string[] = []): Picker<string[]> {
  const boxes = ROLES.map((role) => h("input", { type: "checkbox", value: role, id: uid("role") }));
  const element = h("fieldset", { class: "roles" }, h("legend", {}, "Roles"));
  boxes.forEach((box, i) =>
    append(element, h("div", { class: "check" }, box, h("label", { for: box.id }, `${ROLES[i]} `, h("span", { class: "hint" }, `(${ROLE_DESCRIPTIONS[ROLES[i]]})`))))
  );
  const picker = {
    element,
    value: () => boxes.filter((box) => box.checked).map((box) => box.value),
    set: (roles: string[]) => boxes.forEach((box) => (box.checked = roles.includes(box.value))),
  };
  picker.set(initial);
  return picker;
}

/** A resource select, the actions on it as checkboxes, and the whole set chosen so far, each removable. */
export function permissionPicker(initial: Permission[] = []): Picker<Permission[]> {
  let chosen = new Map<string, Set<string>>();
  const select = h("select", { id: uid("res") }, ...RESOURCES.map((r) => h("option", { value: r }, r)));
  const boxes = ACTIONS.map((action) => h("input", { type: "checkbox", value: action, id: uid("act") }));
  const actions = h("fieldset", { class: "actions" }, h("legend", {}, "Actions on the chosen resource"));
  boxes.forEach((box, i) => append(actions, h("div", { class: "check" }, box, h("label", { for: box.id }, ACTIONS[i]))));
  const summary = h("ul", { class: "chosen", "aria-label": "Permissions chosen" });

  const show = () => {
    const set = chosen.get(select.value);
    boxes.forEach((box) => (box.checked = !!set?.has(box.value)));
    const items = RESOURCES.filter((r) => chosen.get(r)?.size).map((resource) =>
      h("li", {}, `${resource}: ${[...chosen.get(resource)!].join(", ")} `,
        h("button", { type: "button", class: "small", "aria-label": `Remove ${resource}`, onclick: () => {
          chosen.delete(resource);
          show();
        } }, "Remove"))
    );
    replace(summary, ...(items.length ? items : [h("li", { class: "hint" }, "No explicit permissions (the roles grant theirs).")]));
  };
  select.addEventListener("change", show);
  for (const box of boxes) {
    box.addEventListener("change", () => {
      const set = chosen.get(select.value) ?? new Set<string>();
      if (box.checked) set.add(box.value);
      else set.delete(box.value);
      chosen.set(select.value, new Set(ACTIONS.filter((a) => set.has(a))));
      show();
    });
  }
  const element = h("fieldset", { class: "permissions" }, h("legend", {}, "Permissions"),
    h("div", { class: "field" }, h("label", { for: select.id }, "Resource"), select), actions, summary);
  const picker = {
    element,
    value: () => RESOURCES.filter((r) => chosen.get(r)?.size).map((resource) => ({ resource, actions: [...chosen.get(resource)!] })),
    set: (permissions: Permission[]) => {
      chosen = new Map(permissions.map((p) => [p.resource, new Set(p.actions)]));
      show();
    },
  };
  picker.set(initial);
  return picker;
}

/** `ADMIN, VIEWER · DOCKER: READ_ANY` */
export function grantsText(roles: string[], permissions: Permission[]): string {
  const parts = [roles.join(", "), permissions.map((p) => `${p.resource}: ${p.actions.join(", ")}`).join("; ")].filter(Boolean);
  return parts.join(" · ") || "none";
}
