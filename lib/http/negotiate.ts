/**
 * Content negotiation for /graphql: which of the two GraphQL media types a request's `Accept` header
 * prefers, by q-value (RFC 9110: the first one listed need not be the one preferred). Errors the service
 * writes itself (401, 405, 413, …) go out in the same type, so that clients which trust a 4xx body only
 * as `application/graphql-response+json` (Apollo Client) show its message.
 */

export const GRAPHQL_RESPONSE = "application/graphql-response+json";
export const APPLICATION_JSON = "application/json";
export type GraphQLMediaType = typeof GRAPHQL_RESPONSE | typeof APPLICATION_JSON;

/** Weight of `type` in the parsed Accept entries: the most specific matching range decides (RFC 9110 12.5.1). */
function weight(entries: readonly { range: string; q: number }[], type: string): { q: number; exact: boolean } {
  let best = { q: 0, specificity: -1 };
  for (const { range, q } of entries) {
    const specificity = range === type ? 2 : range === "application/*" ? 1 : range === "*/*" ? 0 : -1;
    if (specificity > best.specificity) best = { q, specificity };
  }
  return { q: best.q, exact: best.specificity === 2 };
}

/**
 * The media type to answer in, or null when neither is acceptable (406). No `Accept` means
 * `application/json`; graphql-response+json is chosen when the client names it with a weight at least
 * that of application/json (`*` alone keeps application/json, what clients without it expect).
 */
export function negotiate(accept: string | null): GraphQLMediaType | null {
  if (accept === null || accept === "") return APPLICATION_JSON;
  // The everyday cases, without parsing.
  if (accept === APPLICATION_JSON || accept === "*/*") return APPLICATION_JSON;
  if (accept === GRAPHQL_RESPONSE) return GRAPHQL_RESPONSE;
  const entries = accept.split(",").map((part) => {
    const [range, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    return { range, q: Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0 };
  });
  const response = weight(entries, GRAPHQL_RESPONSE);
  const json = weight(entries, APPLICATION_JSON);
  if (response.q > 0 && response.exact && response.q >= json.q) return GRAPHQL_RESPONSE;
  if (json.q > 0 && json.q >= response.q) return APPLICATION_JSON;
  if (response.q > 0) return GRAPHQL_RESPONSE;
  return null;
}
