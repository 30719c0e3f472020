/**
 * Reading a request: the credential, the body (fetch runtimes), the request target and the GraphQL
 * parameters from a JSON body or a URL. Each refusal throws an `Error` whose message a client can act on.
 */
import { readStreamBounded } from "../core/_bounded-read.ts";
import type { ServiceRequest } from "./types.ts";

/** The secret from `Authorization: Bearer <key>` or `x-api-key: <key>`, or a message saying what is wrong. */
export function credential(headers: ServiceRequest["headers"]): { secret: string } | { problem: string } {
  const authorization = headers.get("authorization")?.trim();
  if (authorization) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (!match) return { problem: "Unsupported Authorization header: send 'Authorization: Bearer <API key>'" };
    return { secret: match[1] };
  }
  const header = headers.get("x-api-key")?.trim();
  if (header) return { secret: header };
  return { problem: "Missing API key: send 'Authorization: Bearer <API key>'" };
}

/** Reads a fetch body as UTF-8 text, giving up (null) as soon as it exceeds `limit` bytes. */
export async function readFetchBody(request: Request, limit: number): Promise<string | null> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > limit) return null;
  if (!request.body) return "";
  // With a declared length the HTTP layer delivers exactly that many bytes.
  if (declared >= 0) return await request.text();
  return readStreamBounded(request.body, limit);
}

export interface Params {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
  extensions?: Record<string, unknown>;
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Checks a request's GraphQL parameters; throws an `Error` whose message a client can act on (-> 400). */
export function checkParams(data: Record<string, unknown>): Params {
  const { query, variables, operationName, extensions } = data;
  if (query === undefined || query === null) {
    const fields = Object.keys(data);
    throw new Error(
      `Request has no "query": send a JSON object like {"query": "{ me { id name } }", "variables": {}}` +
        (fields.length ? `; got the fields ${fields.map((f) => JSON.stringify(f)).join(", ")}` : ""),
    );
  }
  if (typeof query !== "string") throw new Error(`"query" must be a string holding a GraphQL document`);
  if (variables != null && !isObject(variables)) throw new Error(`"variables" must be a JSON object`);
  if (operationName != null && typeof operationName !== "string") throw new Error(`"operationName" must be a string`);
  if (extensions != null && !isObject(extensions)) throw new Error(`"extensions" must be a JSON object`);
  return {
    query,
    variables: (variables ?? undefined) as Params["variables"],
    operationName: (operationName ?? undefined) as string | undefined,
    extensions: (extensions ?? undefined) as Params["extensions"],
  };
}

export function paramsFromUrl(url: URL): Params {
  const json = (name: string) => {
    const value = url.searchParams.get(name);
    if (value === null) return undefined;
    try {
      return JSON.parse(value);
    } catch {
      throw new Error(`The "${name}" URL parameter is not valid JSON`);
    }
  };
  if (!url.searchParams.has("query")) {
    throw new Error(`No query was sent: put the GraphQL document in the "query" URL parameter (GET /graphql?query={me{id}}), or POST it as JSON`);
  }
  return checkParams({
    query: url.searchParams.get("query"),
    variables: json("variables"),
    extensions: json("extensions"),
    operationName: url.searchParams.get("operationName") ?? undefined,
  });
}

export function paramsFromBody(body: string, contentType: string | null): Params {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  // application/json alone: graphql-response+json is a type of answers, not of requests.
  if (mediaType !== "application/json") {
    throw Object.assign(new Error("Unsupported Content-Type: send the request body as application/json"), { status: 415 });
  }
  return paramsFromJson(body);
}

/** The GraphQL parameters of a JSON body; throws an `Error` saying what is wrong (-> 400). */
export function paramsFromJson(body: string): Params {
  if (!body.trim()) throw new Error(`Request body is empty: send a JSON object like {"query": "{ me { id name } }"}`);
  let data: unknown;
  try {
    data = JSON.parse(body);
  } catch (error) {
    // V8's message quotes the start of the body, which may be a key pasted in the wrong place: only where it failed.
    const at = error instanceof SyntaxError ? / at position (\d+)/.exec(error.message)?.[1] : undefined;
    throw new Error(`Request body is not valid JSON${at === undefined ? "" : ` (at position ${at})`}`);
  }
  if (!isObject(data)) throw new Error(`Request body must be a JSON object with a "query" string`);
  return checkParams(data);
}

/** The path of a request target, or null when it is not one (`*`, an absolute URL with a bad port). */
export function pathOf(url: string): string | null {
  // Node gives a path, fetch runtimes a full URL; only the latter needs the URL parser.
  if (url.startsWith("/")) {
    const query = url.indexOf("?");
    return query < 0 ? url : url.slice(0, query);
  }
  try {
    return new URL(url).pathname;
  } catch {
    return null;
  }
}
