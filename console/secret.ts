// A new secret, shown once: the service returns it only in the result of create or rotate and never again.
import { h, message, uid } from "./dom.ts";

/** The panel showing a new key's secret, with a copy button and the plain warning; `onDone` removes it. */
export function secretPanel(name: string, secret: string, onDone: () => void): HTMLElement {
  const input = h("input", { type: "text", readonly: true, value: secret, id: uid("secret"), class: "secret", spellcheck: "false", autocomplete: "off" });
  const status = h("p", { class: "msg status", role: "status" });
  const copy = h("button", { type: "button", onclick: async () => {
    try {
      await navigator.clipboard.writeText(secret);
      status.textContent = "Copied to the clipboard.";
    } catch {
      input.select();
      status.textContent = "Copying was not allowed here: the key is selected, press Ctrl+C (or ⌘C).";
    }
  } }, "Copy key");
  const heading = h("h2", { id: uid("h"), tabindex: "-1" }, `New secret for ${name}`);
  const panel = h("section", { class: "secret-panel", "aria-labelledby": heading.id },
    heading,
    message("warning", "Copy this key now: it will not be shown again. The service keeps only a hash of it."),
    h("div", { class: "field" }, h("label", { for: input.id }, "New API key"), input),
    h("div", { class: "buttons" }, copy, h("button", { type: "button", class: "secondary", onclick: () => {
      input.value = "";
      panel.remove();
      onDone();
    } }, "Done, I have copied it")),
    status);
  queueMicrotask(() => heading.focus());
  return panel;
}
