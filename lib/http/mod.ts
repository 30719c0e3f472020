/**
 * `service-api/server`: the GraphQL service as a library. `createHandler` is a fetch-style handler for any
 * runtime; `serve` listens (Deno.serve under Deno, node:http under Node) with the service's limits.
 *
 * @example
 * import { createKeyStore } from "service-api-keys";
 * import { serve } from "service-api-keys/server";
 * const server = await serve({ store: createKeyStore(), port: 0 });
 * console.log(server.url); // http://127.0.0.1:54321
 * await server.close();
 */
export {
  type AuthFailure,
  type FetchHandler,
  type HandlerOptions,
  MAX_BODY_BYTES,
  type MetricsEndpoint,
  type RequestEvent,
  type ServiceObserver,
} from "./types.ts";
export { createHandler } from "./fetch.ts";
export { type RunningServer, serve, type ServeOptions } from "./serve.ts";
export { createSchema, DOCUMENT_LIMITS, FIELD_PERMISSIONS, type GraphQLContext } from "../graphql/schema.ts";
