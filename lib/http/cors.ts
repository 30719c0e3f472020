/**
 * CORS for /graphql, off unless origins are configured (`corsOrigins`, `--cors-origin`,
 * `SERVICE_API_CORS_ORIGINS`). Keys travel in headers, never cookies, so credentials are never allowed
 * and `*` is acceptable: a page on any origin can use only a key its user gives it.
 */
import { ServiceError } from "../core/errors.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

const PREFLIGHT_HEADERS = {
  "access-control-allow-methods": "GET, POST",
  "access-control-allow-headers": "authorization, content-type, x-api-key",
  "access-control-max-age": "600",
};

/**
 * Checks configured origins: each exactly `scheme://host[:port]` (http or https, no path, no
 * trailing slash), or `*` alone. Accepts a comma-separated string or a list; throws a USAGE error
 * naming the bad entry.
 */
export function parseCorsOrigins(value: string | readonly string[]): string[] {
  const list = (typeof value === "string" ? value.split(",") : [...value]).map((s) => s.trim()).filter(Boolean);
  for (const origin of list) {
    if (origin === "*") {
      if (list.length > 1) throw new ServiceError("USAGE", "CORS origin '*' allows every origin: give it alone");
      continue;
    }
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      // reported below
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.origin !== origin) {
      throw new ServiceError(
        "USAGE",
        `Invalid CORS origin '${origin.slice(0, 100)}': use scheme://host[:port] exactly, like https://app.example.com, or *`,
      );
    }
  }
  return list;
}

/** What the handler asks of CORS; null when it is off. */
export interface Cors {
  /** The answer to a preflight `OPTIONS /graphql`. */
  preflight(request: ServiceRequest): ServiceResponse;
  /** `response` with `Origin` added to its `Vary`, and the allow headers when the request's origin is allowed (a copy: answers may be cached). */
  decorate(request: ServiceRequest, response: ServiceResponse): ServiceResponse;
}

export function createCors(origins: readonly string[] | string | undefined): Cors | null {
  if (origins === undefined) return null;
  const list = parseCorsOrigins(origins);
  if (list.length === 0) return null;
  const any = list.includes("*");
  const allowed = new Set(list);
  const allow = (request: ServiceRequest): Record<string, string> => {
    const origin = request.headers.get("origin");
    if (origin === null || !(any || allowed.has(origin))) return {};
    return {
      "access-control-allow-origin": any ? "*" : origin,
      "access-control-expose-headers": "www-authenticate, retry-after, ratelimit, ratelimit-policy",
    };
  };
  return {
    preflight: (request) => {
      const headers = allow(request);
      return {
        status: 204,
        headers: { vary: "Origin", allow: "GET, POST, OPTIONS", ...headers, ...(headers["access-control-allow-origin"] ? PREFLIGHT_HEADERS : {}) },
        body: null,
      };
    },
    decorate: (request, response) => ({
      status: response.status,
      body: response.body,
      headers: { ...response.headers, vary: response.headers.vary ? `Origin, ${response.headers.vary}` : "Origin", ...allow(request) },
    }),
  };
}
