// Signing in: paste a key. `check` asks the service whether the key works for this page and says what is
// missing; only a key that passes is kept (in this tab's sessionStorage, see api.ts).
import { ApiError, gql, session } from "./api.ts";
import { field, h, message, replace } from "./dom.ts";

export interface Me {
  name: string;
  roles: string[];
  permissions: { resource: string; actions: string[] }[];
}

/** Who the key is (null when it may not read itself); a refused key rejects with the service's message. */
export async function whoAmI(key: string): Promise<Me | null> {
  try {
    return (await gql<{ me: Me }>(`{ me { name roles permissions { resource actions } } }`, {}, key)).me;
  } catch (error) {
    if ((error as ApiError).code === "FORBIDDEN") return null;
    throw error;
  }
}

/** The sign-in form; `check` returns a message saying what the key lacks, or null to sign in. */
export function signInForm(intro: string, check: (key: string) => Promise<string | null>, onSignedIn: () => void): HTMLFormElement {
  const input = h("input", { type: "password", autocomplete: "off", spellcheck: "false", required: true });
  const submit = h("button", { type: "submit" }, "Sign in");
  const status = h("div");
  const form = h("form", { class: "sign-in", "aria-label": "Sign in" },
    h("h2", {}, "Sign in"),
    h("p", {}, intro),
    field("API key", input, "Kept in this browser tab only, until you sign out or close the tab; never in a cookie."),
    h("div", { class: "buttons" }, submit),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return replace(status, message("error", "Paste an API key first."));
    submit.disabled = true;
    replace(status, message("status", "Checking the key…"));
    try {
      const problem = await check(key);
      if (problem) return replace(status, message("error", problem));
      input.value = "";
      session.set(key);
      onSignedIn();
    } catch (error) {
      replace(status, message("error", (error as ApiError).message));
    } finally {
      submit.disabled = false;
    }
  });
  queueMicrotask(() => input.focus());
  return form;
}
