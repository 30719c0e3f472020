// The explorer's browser side: an API-key field above GraphiQL. Bundled by scripts/explorer-build.mjs into
// dist/explorer/ (never loaded by Node). The key lives in this page's memory and in sessionStorage (this
// tab only, gone when it closes); it is sent only as `Authorization: Bearer <key>` to this page's own
// origin, never put in a URL, never in a cookie.
//
// Until a key is in use GraphiQL gets `schema: null`, so it sends no introspection request that could only
// answer "Missing API key"; the page shows a sign-in hint instead. A key is in use once the field holds a
// whole `sapi_` token (pasted) or the form is submitted; each new key makes a new fetcher, and GraphiQL
// loads the schema again with it.
import { createElement as h, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import "graphiql/graphiql.css";
import "./app.css";

const STORAGE = "service-api.explorer.key";
// The page is served at the GraphQL endpoint itself (GET /graphql, Accept: text/html): post there.
const ENDPOINT = location.pathname;
// The shape of a whole secret (prefix, 43 + 6 base62 characters); the service checks the rest.
const WHOLE_KEY = /^sapi_[0-9A-Za-z]{49}$/;
const HINT = "Paste an API key above to load the schema and run queries.";

const stored = (): string => {
  try {
    return sessionStorage.getItem(STORAGE) ?? "";
  } catch {
    return ""; // storage disabled: memory only
  }
};
const remember = (key: string) => {
  try {
    sessionStorage.setItem(STORAGE, key);
  } catch {}
};

function makeFetcher(key: string) {
  return async (params: unknown) => {
    if (!key) return { errors: [{ message: HINT }] };
    const response = await fetch(ENDPOINT, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/graphql-response+json, application/json",
        authorization: `Bearer ${key}`,
      },
      body: JSON.stringify(params),
      credentials: "omit",
    });
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch {
      return { errors: [{ message: `HTTP ${response.status}: ${text.slice(0, 200)}` }] };
    }
  };
}

function Explorer() {
  const [key, setKey] = useState(stored);
  const [active, setActive] = useState(() => key.trim());
  const fetcher = useMemo(() => makeFetcher(active), [active]);
  const use = (value: string) => {
    remember(value);
    setActive(value.trim());
  };
  const onKey = (event: { target: { value: string } }) => {
    const value = event.target.value;
    setKey(value);
    if (WHOLE_KEY.test(value.trim()) || value.trim() === "") use(value);
  };
  return h(
    "div",
    { className: "sapi-shell" },
    h(
      "form",
      {
        className: "sapi-key",
        onSubmit: (event: { preventDefault(): void }) => {
          event.preventDefault();
          use(key);
        },
      },
      h("label", { htmlFor: "sapi-key-input" }, "API key"),
      h("input", {
        id: "sapi-key-input",
        type: "password",
        autoComplete: "off",
        spellCheck: false,
        placeholder: "sapi_…  (kept in this tab only, sent as Authorization: Bearer)",
        value: key,
        onChange: onKey,
      }),
      h("button", { type: "submit" }, "Use key"),
      active ? null : h("p", { className: "sapi-hint", role: "status" }, HINT),
    ),
    h(
      "div",
      { className: "sapi-graphiql" },
      h(GraphiQL, { fetcher, schema: active ? undefined : null, defaultQuery: "{ me { name } }\n", shouldPersistHeaders: false }),
    ),
  );
}

createRoot(document.getElementById("root")!).render(h(Explorer));
