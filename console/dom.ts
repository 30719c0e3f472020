// A few DOM helpers. Text from the service (names, descriptions, errors) only ever becomes a Text node:
// nothing here parses HTML, so a name like `<img src=x onerror=…>` is shown as those characters.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | EventListener | undefined>;

/** `h("button", { type: "button", onclick }, "Delete")`: an element; `on…` attributes are listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name in element && typeof value !== "string") (element as unknown as Record<string, unknown>)[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, ...children);
  return element;
}

/** Appends children, strings as text. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replaces an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

let ids = 0;
/** A fresh element id, for label `for` and `aria-describedby`. */
export const uid = (prefix: string): string => `${prefix}-${++ids}`;

/** A labelled control: `<label for>` then the control, in one wrapper. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  control.id ||= uid("f");
  const wrap = h("div", { class: "field" }, h("label", { for: control.id }, label), control);
  if (hint) {
    const note = h("p", { class: "hint", id: uid("hint") }, hint);
    control.setAttribute("aria-describedby", note.id);
    wrap.appendChild(note);
  }
  return wrap;
}

/** A message region: `role="alert"` for errors, `role="status"` otherwise, announced when it changes. */
export function message(kind: "error" | "status" | "warning", text: string): HTMLElement {
  return h("p", { class: `msg ${kind}`, role: kind === "status" ? "status" : "alert" }, text);
}

/** An ISO instant as the CLI writes it, "2026-11-28 16:45 UTC" (a time with its zone), or a dash. */
export function when(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
