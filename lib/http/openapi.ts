/**
 * The OpenAPI 3.1 description of the verification routes (`/auth`, `POST /v2/keys.verifyKey`), served at
 * `GET /openapi.json` while they are and kept in docs/openapi.json (a test holds the two equal).
 */
import { RESOURCES } from "../core/model.ts";
import { VERSION } from "../core/version.ts";
import { errorResponse, JSON_TYPE } from "./responses.ts";
import type { ServiceRequest, ServiceResponse } from "./types.ts";

const header = (description: string) => ({ description, schema: { type: "string" } });
const RATE_HEADERS = {
  RateLimit: header("The limit with least room left: limit=10, remaining=9, reset=1 (draft-ietf-httpapi-ratelimit-headers)"),
  "RateLimit-Policy": header("Each limit of the key and its window in seconds: 10;w=1, 1000;w=3600"),
};
const ERRORS = { "application/json": { schema: { $ref: "#/components/schemas/Errors" } } };
const UNKEY_ERROR = { "application/json": { schema: { $ref: "#/components/schemas/UnkeyError" } } };
const error = (description: string, headers: Record<string, unknown> = {}) => ({ description, headers, content: ERRORS });
const unkeyError = (description: string) => ({ description, content: UNKEY_ERROR });
const bearer = [{ bearer: [] }, { apiKeyHeader: [] }];

const auth = {
  summary: "Forward authentication for reverse proxies",
  description: "Any method (GET shown); also /auth/{path}. The key from Authorization: Bearer or X-API-Key; the permission required from X-Required-Permission and/or ?permission= (RESOURCE:ACTION, comma-separated, all needed). See docs/gateways.md.",
  security: bearer,
  parameters: [
    { name: "X-Required-Permission", in: "header", required: false, schema: { type: "string", example: "DOCKER:READ_ANY,VMS:READ_ANY" } },
    { name: "permission", in: "query", required: false, schema: { type: "string", example: "DOCKER:READ_ANY" } },
  ],
  responses: {
    200: {
      description: "A valid key holding every permission required; no body",
      headers: {
        "X-Api-Key-Id": header("The key's id"),
        "X-Api-Key-Name": header("The key's name, percent-encoded (UTF-8) beyond printable ASCII"),
        "X-Api-Key-Roles": header("The key's roles, comma-separated (empty when none)"),
        ...RATE_HEADERS,
      },
    },
    400: error("A malformed requirement (the message names the form), an unknown resource or action, or an API key in the query string"),
    401: error("Key missing, malformed, unknown, revoked, expired or disabled (code KEY_DISABLED)", { "WWW-Authenticate": header("Bearer") }),
    403: error("The key lacks a permission required (the message names those it lacks); no rate limit nor credit spent"),
    429: error("RATE_LIMITED, USAGE_EXCEEDED or TOO_MANY_FAILED_AUTHENTICATIONS", { "Retry-After": header("Seconds to wait"), ...RATE_HEADERS }),
    503: error("The key store cannot be reached", { "Retry-After": header("1") }),
  },
};

const verifyKey = {
  summary: "Verify a key (Unkey v2 compatible)",
  description: "Unkey's POST /v2/keys.verifyKey. The caller's key needs API_KEY:READ_ANY. Supported: key, permissions (a query over RESOURCE:ACTION names), credits.cost of 1, tags (accepted, unused). Not supported: ratelimits, migrationId, other costs (400); identity and meta are never returned.",
  security: [{ bearer: [] }],
  requestBody: {
    required: true,
    content: {
      "application/json": {
        schema: {
          type: "object",
          required: ["key"],
          properties: {
            key: { type: "string" },
            permissions: { type: "string", example: "DOCKER:READ_ANY AND (VMS:READ_ANY OR VMS:UPDATE_ANY)" },
            credits: { type: "object", properties: { cost: { type: "integer", const: 1 } } },
            tags: { type: "array", items: { type: "string" } },
          },
        },
      },
    },
  },
  responses: {
    200: { description: "The verification, valid or not", content: { "application/json": { schema: { $ref: "#/components/schemas/VerifyKeyResponse" } } } },
    400: unkeyError("A malformed body or permission query, or an unsupported field"),
    401: unkeyError("The caller's key is missing or not valid"),
    403: unkeyError("The caller's key lacks API_KEY:READ_ANY"),
    405: unkeyError("A method other than POST"),
    413: unkeyError("A body over 1 MiB"),
    429: { description: "The caller is over its own rate limits or credits, or failed too often", content: { "application/problem+json": UNKEY_ERROR["application/json"] } },
    503: unkeyError("The key store cannot be reached"),
  },
};

const schemas = {
  Errors: {
    type: "object",
    properties: { errors: { type: "array", items: { type: "object", properties: { message: { type: "string" }, extensions: { type: "object", properties: { code: { type: "string" } } } } } } },
  },
  UnkeyError: {
    type: "object",
    properties: {
      meta: { type: "object", properties: { requestId: { type: "string" } } },
      error: { type: "object", properties: { title: { type: "string" }, detail: { type: "string" }, status: { type: "integer" }, type: { type: "string" } } },
    },
  },
  VerifyKeyResponse: {
    type: "object",
    properties: {
      meta: { type: "object", properties: { requestId: { type: "string" } } },
      data: {
        type: "object",
        required: ["valid", "code"],
        properties: {
          valid: { type: "boolean" },
          code: { enum: ["VALID", "NOT_FOUND", "FORBIDDEN", "INSUFFICIENT_PERMISSIONS", "USAGE_EXCEEDED", "RATE_LIMITED", "DISABLED", "EXPIRED"] },
          keyId: { type: "string" },
          name: { type: "string" },
          expires: { type: "integer", description: "Unix time in milliseconds" },
          credits: { type: "integer" },
          enabled: { type: "boolean" },
          roles: { type: "array", items: { type: "string" } },
          permissions: { type: "array", items: { type: "string", description: `RESOURCE:ACTION, RESOURCE one of ${RESOURCES.join(", ")}` } },
          ratelimits: {
            type: "array",
            items: {
              type: "object",
              properties: {
                id: { type: "string" }, name: { type: "string" }, limit: { type: "integer" }, duration: { type: "integer" }, reset: { type: "integer", description: "Unix time in milliseconds" },
                remaining: { type: "integer" }, exceeded: { type: "boolean" }, autoApply: { type: "boolean" },
              },
            },
          },
        },
      },
    },
  },
};

/** The document (see the top of this file). */
export const OPENAPI = {
  openapi: "3.1.0",
  info: { title: "service-api verification routes", version: VERSION, description: "Forward authentication for reverse proxies, and Unkey's v2 key verification." },
  paths: { "/auth": { get: auth }, "/v2/keys.verifyKey": { post: verifyKey } },
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer" }, apiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key" } },
    schemas,
  },
};

let served: string | undefined;
/** `GET /openapi.json`. */
export const openapiRoute = (request: ServiceRequest): ServiceResponse =>
  request.method === "GET" || request.method === "HEAD"
    ? { status: 200, headers: { "content-type": JSON_TYPE }, body: request.method === "HEAD" ? null : (served ??= JSON.stringify(OPENAPI, null, 2) + "\n") }
    : errorResponse(405, "METHOD_NOT_ALLOWED", "Use GET on /openapi.json", { allow: "GET, HEAD" });
