/**
 * The service as a fetch-style handler, `(Request) => Promise<Response>`, for `Deno.serve`, other
 * fetch runtimes and tests: translates to and from the runtime-neutral handler of `handler.ts`.
 */
import { createServiceHandler } from "./handler.ts";
import { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES } from "./types.ts";
import { readFetchBody } from "./request.ts";

/**
 * Creates the service's fetch-style request handler, for `Deno.serve`, other fetch runtimes and tests.
 *
 * @example
 * const handler = createHandler({ store: createKeyStore() });
 * const response = await handler(new Request("http://x/healthz")); // 200
 */
export function createHandler(options: HandlerOptions): FetchHandler {
  const handle = createServiceHandler(options);
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  return Object.assign(async (request: Request, info?: { remoteAddr?: { hostname?: string } }) => {
    const response = await handle({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: () => readFetchBody(request, limit),
      remoteAddress: info?.remoteAddr?.hostname,
      receivedAt: performance.now(), // the runtime calls us once the request's head is in
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  }, { close: handle.close });
}
