// Delete (after typing the key's name) and rotate (when the service offers it), each in a modal dialog:
// the browser keeps focus inside it and Escape closes it.
import { type ApiKey, ApiError, gql, KEY_FIELDS } from "./api.ts";
import { field, h, message, replace } from "./dom.ts";

/** Opens a modal dialog holding `content`; returns a function that closes and removes it. */
function openDialog(label: string, content: (close: () => void) => Node[]): () => void {
  const dialog = h("dialog", { "aria-label": label });
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  dialog.addEventListener("close", () => dialog.remove());
  dialog.append(...content(close));
  document.body.appendChild(dialog);
  dialog.showModal();
  return close;
}

/** Asks for the key's name, then deletes it. */
export function confirmDelete(key: ApiKey, onDeleted: () => void): void {
  openDialog(`Delete ${key.name}`, (close) => {
    const typed = h("input", { type: "text", autocomplete: "off", spellcheck: "false" });
    const remove = h("button", { type: "submit", class: "danger", disabled: true }, "Delete");
    const status = h("div");
    typed.addEventListener("input", () => (remove.disabled = typed.value !== key.name));
    const form = h("form", { method: "dialog" },
      h("h2", {}, `Delete ${key.name}?`),
      h("p", {}, "Programs using this key are refused from their next request. This cannot be undone."),
      field(`Type the key's name (${key.name}) to confirm`, typed),
      h("div", { class: "buttons" }, remove, h("button", { type: "button", class: "secondary", onclick: close }, "Cancel")),
      status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (typed.value !== key.name) return;
      remove.disabled = true;
      try {
        await gql(`mutation($ids: [PrefixedID!]!) { apiKey { delete(input: { ids: $ids }) } }`, { ids: [key.id] });
        close();
        onDeleted();
      } catch (error) {
        remove.disabled = false;
        replace(status, message("error", (error as ApiError).message));
      }
    });
    return [form];
  });
}

/** Rotates the key (new secret, old one kept for `graceSeconds` if given); `onRotated` shows the secret. */
export function confirmRotate(key: ApiKey, supported: boolean, onRotated: (rotated: ApiKey) => void): void {
  openDialog(`Rotate ${key.name}`, (close) => {
    if (!supported) {
      return [
        h("h2", {}, `Rotate ${key.name}`),
        message("warning", "This service does not offer rotation (its GraphQL schema has no apiKey { rotate }). Update the service, or create a new key and delete this one."),
        h("div", { class: "buttons" }, h("button", { type: "button", onclick: close }, "Close")),
      ];
    }
    const grace = h("input", { type: "number", min: "0", max: "86400", step: "1", value: "0", inputmode: "numeric" });
    const go = h("button", { type: "submit" }, "Rotate key");
    const status = h("div");
    const form = h("form", { method: "dialog" },
      h("h2", {}, `Rotate ${key.name}`),
      h("p", {}, "The key gets a new secret; its id, name, roles, permissions and expiry stay."),
      field("Seconds the old secret keeps working", grace, "0: it stops at once; up to 86400 (24 hours), so programs can switch over."),
      h("div", { class: "buttons" }, go, h("button", { type: "button", class: "secondary", onclick: close }, "Cancel")),
      status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      go.disabled = true;
      const seconds = Number(grace.value) || null;
      try {
        const data = await gql(`mutation($id: PrefixedID!, $g: Int) { apiKey { rotate(id: $id, graceSeconds: $g) { ${KEY_FIELDS} key } } }`, { id: key.id, g: seconds });
        close();
        onRotated(data.apiKey.rotate);
      } catch (error) {
        go.disabled = false;
        replace(status, message("error", (error as ApiError).message));
      }
    });
    return [form];
  });
}
