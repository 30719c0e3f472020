/**
 * `service-api/client`: talk to a running service. `createClient` sends GraphQL requests with a key;
 * `createRemoteBackend` manages keys through it with the same methods as a local store.
 *
 * @example
 * import { createClient } from "service-api-keys/client";
 * const client = createClient({ baseUrl: "http://127.0.0.1:3001", apiKey: process.env.SERVICE_API_KEY! });
 * const { me } = await client.request<{ me: { name: string } }>("{ me { name } }");
 */
export { type Client, ClientError, type ClientOptions, createClient, type GraphQLErrorInfo } from "./client.ts";
export { createRemoteBackend, type RemoteBackendOptions } from "./remote.ts";
