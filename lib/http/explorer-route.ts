/**
 * Which requests belong to the explorer, decided without loading it: a browser's `GET /graphql`
 * (Accept names text/html, no `query` parameter) and `GET /graphql/explorer/<file>`. The explorer
 * (`explorer.ts`) and its assets are loaded on the first such request, never when the service starts.
 */
import type { ServiceRequest, ServiceResponse } from "./types.ts";

/** Where the explorer's assets are served; the page refers to them relative to `/graphql`. */
export const EXPLORER_ASSETS = "/graphql/explorer/";

/** Answers a request if it is the explorer's, else returns null (the request goes on to GraphQL). */
export type ExplorerRoute = (request: ServiceRequest, pathname: string) => Promise<ServiceResponse<string | Uint8Array<ArrayBuffer>>> | null;

/** The explorer's route, or null when it is turned off (`explorer: false`, `--no-explorer`). */
export function explorerRoute(enabled: boolean | undefined): ExplorerRoute | null {
  if (enabled === false) return null;
  let loading: Promise<(request: ServiceRequest, pathname: string) => Promise<ServiceResponse<string | Uint8Array<ArrayBuffer>>>> | undefined;
  return (request, pathname) => {
    if (request.method !== "GET") return null;
    if (pathname === "/graphql") {
      // A GraphQL request over GET carries `query`; only a page load gets the page.
      if (!request.headers.get("accept")?.includes("text/html") || /[?&]query=/.test(request.url)) return null;
    } else if (!pathname.startsWith(EXPLORER_ASSETS)) {
      return null;
    }
    loading ??= import("./explorer.ts").then(({ createExplorer }) => createExplorer(EXPLORER_ASSETS)).catch((error) => {
      loading = undefined;
      throw error;
    });
    return loading.then((explorer) => explorer(request, pathname));
  };
}
