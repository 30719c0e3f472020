/**
 * `/auth` (and `/auth/<path>`, as Envoy's `path_prefix` asks it), any method: forward authentication for
 * reverse proxies (nginx `auth_request`, Caddy `forward_auth`, Traefik `ForwardAuth`, Envoy `ext_authz`),
 * which ask it about each request before passing that request upstream. The key goes through the gate
 * every route shares (`authenticate.ts`: the credential as `/graphql` takes it, the failed-authentication
 * count per client, last use, rate limits and credits); the permission required comes from
 * `required-permissions.ts`.
 *
 * Answers: 200 without a body, with `X-Api-Key-Id`, `X-Api-Key-Name` (percent-encoded beyond printable
 * ASCII) and `X-Api-Key-Roles` for the proxy to pass upstream; 401 with `WWW-Authenticate: Bearer`; 403
 * for a key lacking a permission required (which costs it no rate limit nor credit); 429 with
 * `Retry-After`; 503 while the store is down; 400 for a malformed requirement or a key in the URL. The
 * body is never read: proxies do not send it.
 */
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { containsSecret } from "../core/secret.ts";
import type { VerifiedKey } from "../store/types.ts";
import type { KeyGate } from "./authenticate.ts";
import { holdsAll, requirement } from "./required-permissions.ts";
import { errorResponse, PRIVATE_HEADERS, privately } from "./responses.ts";
import type { HandlerOptions, RememberedResponse, ServiceRequest, ServiceResponse, Trace } from "./types.ts";

/** What `/auth` needs from the handler's set-up. */
export interface ForwardAuthParts {
  options: HandlerOptions;
  /** The key gate every route shares (`authenticate.ts`): verification, throttle, last use, usage control. */
  gate: KeyGate;
  /** Told of each answer that is not a 503, so that the end of an outage is logged. */
  worked: () => void;
  /** The answer to a failure (the store down: 503). */
  failure: (error: unknown) => ServiceResponse;
}

const keyInUrl = (): ServiceResponse =>
  errorResponse(400, "BAD_REQUEST", "API keys are not accepted in the URL, which proxies and servers log: send 'Authorization: Bearer <API key>' or 'X-API-Key: <API key>'");

/** A name as a header value: printable ASCII as it is, anything else percent-encoded as UTF-8 (names hold no `%`). */
const headerText = (text: string): string => (/[^\x20-\x7e]/.test(text) ? text.replace(/[^\x20-\x7e]/gu, encodeURIComponent) : text);

/** `/auth`, or under it (`/auth/<path>`: Envoy appends the client's path). */
export const isAuthPath = (pathname: string): boolean => pathname === "/auth" || pathname.startsWith("/auth/");

/**
 * The 200 for each verified key: one frozen object while the store remembers the key, marked remembered so
 * that node.ts writes the head it kept for it (a key with limits gets its RateLimit lines added to a copy).
 */
const identities = new WeakMap<VerifiedKey, RememberedResponse>();
function identity(key: VerifiedKey): RememberedResponse {
  let response = identities.get(key);
  if (response === undefined) {
    const headers = { "x-api-key-id": key.id, "x-api-key-name": headerText(key.name), "x-api-key-roles": key.roles.join(","), ...PRIVATE_HEADERS };
    identities.set(key, response = Object.freeze({ status: 200, headers: Object.freeze(headers), body: null, remembered: true as const }));
  }
  return response;
}

/** The `/auth` route (see the top of this file). */
export function createForwardAuth({ gate, worked, failure }: ForwardAuthParts) {
  const check = (request: ServiceRequest, trace: Trace): MaybePromise<ServiceResponse> => {
    trace.operation = "none"; // no GraphQL operation: not a remembered query either
    const at = request.url.indexOf("?");
    const query = at < 0 ? null : request.url.slice(at + 1);
    // Ours only (the prefix, or a secret's body and checksum): Envoy appends the client's own query, whose `token=` may be the upstream's.
    if (query !== null && (/sapi(?:_|%5f)/i.test(query) || containsSecret(query))) return keyInUrl();
    const required = requirement(request.headers.get("x-required-permission"), query);
    if ("problem" in required) return errorResponse(400, "BAD_REQUEST", required.problem);
    // A key lacking a permission required is refused before its use is counted.
    const lacks = (key: VerifiedKey) => {
      if (holdsAll(key, required)) return undefined;
      const lacking = required.filter((pair) => !holdsAll(key, [pair])).map(([pair]) => pair);
      return errorResponse(403, "FORBIDDEN", `This key lacks the permission required: ${lacking.join(", ")}`);
    };
    return gate.present(request, identity, trace, lacks);
  };

  const answered = (response: ServiceResponse) => {
    if (response.status !== 503) worked();
    return privately(response);
  };
  return (request: ServiceRequest, trace: Trace): MaybePromise<ServiceResponse> => {
    try {
      return after(check(request, trace), answered, (error) => privately(failure(error)));
    } catch (error) {
      return privately(failure(error));
    }
  };
}
