// The explorer's browser side: an API-key field above GraphiQL. Bundled by scripts/explorer-build.mjs into
// dist/explorer/ (never loaded by Node). The key lives in this page's memory and in sessionStorage (this
// tab only, gone when it closes); it is sent only as `Authorization: Bearer <key>` to this page's own
// origin, never put in a URL, never in a cookie.
import { createElement as h, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import "graphiql/graphiql.css";
import "./app.css";

const STORAGE = "service-api.explorer.key";
// The page is served at the GraphQL endpoint itself (GET /graphql, Accept: text/html): post there.
const ENDPOINT = location.pathname;

const stored = (): string => {
  try {
    return sessionStorage.getItem(STORAGE) ?? "";
  } catch {
    return ""; // storage disabled: memory only
  }
};

function Explorer() {
  const [key, setKey] = useState(stored);
  // The fetcher reads the key at call time, so GraphiQL keeps one fetcher (it refetches the schema when it changes).
  const keyRef = useRef(key);
  keyRef.current = key;
  const [fetcher] = useState(() => async (params: unknown) => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/graphql-response+json, application/json",
    };
    const current = keyRef.current.trim();
    if (current) headers.authorization = `Bearer ${current}`;
    const response = await fetch(ENDPOINT, { method: "POST", headers, body: JSON.stringify(params), credentials: "omit" });
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch {
      return { errors: [{ message: `HTTP ${response.status}: ${text.slice(0, 200)}` }] };
    }
  });
  const onKey = (event: { target: { value: string } }) => {
    setKey(event.target.value);
    try {
      sessionStorage.setItem(STORAGE, event.target.value);
    } catch {}
  };
  return h(
    "div",
    { className: "sapi-shell" },
    h(
      "form",
      { className: "sapi-key", onSubmit: (event: { preventDefault(): void }) => event.preventDefault() },
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
    ),
    h("div", { className: "sapi-graphiql" }, h(GraphiQL, { fetcher, defaultQuery: "{ me { name } }\n", shouldPersistHeaders: false })),
  );
}

createRoot(document.getElementById("root")!).render(h(Explorer));
