/**
 * Which requests belong to the web console, decided without loading it: `GET /console` and
 * `GET /authorize` (one page: the console, and the consent page apps send people to) and
 * `GET /console/<file>`. The console's files (`console-assets.ts`, reading `dist/console/`) are loaded on
 * the first such request, never when the service starts. The console itself only calls `POST /graphql`
 * with the key pasted into it: it has no endpoint of its own.
 */
import type { ServiceRequest, ServiceResponse } from "./types.ts";

/** Where the console's script and style are served; the page refers to them as `console/<file>`. */
export const CONSOLE_ASSETS = "/console/";
/** The paths that answer the page itself. */
export const CONSOLE_PAGES: readonly string[] = ["/console", "/authorize"];

type Answer = Promise<ServiceResponse<string | Uint8Array<ArrayBuffer>>>;
/** Answers a request if it is the console's, else returns null (the request goes on to the other routes). */
export type ConsoleRoute = (request: ServiceRequest, pathname: string) => Answer | null;

/** The console's route, or null when it is turned off (`console: false`, `--no-console`). */
export function consoleRoute(enabled: boolean | undefined): ConsoleRoute | null {
  if (enabled === false) return null;
  let loading: Promise<(request: ServiceRequest, pathname: string) => Answer> | undefined;
  return (request, pathname) => {
    if (!CONSOLE_PAGES.includes(pathname) && !pathname.startsWith(CONSOLE_ASSETS)) return null;
    if (request.method !== "GET" && request.method !== "HEAD") return null;
    loading ??= import("./console-assets.ts").then(({ createConsole }) => createConsole(CONSOLE_ASSETS, CONSOLE_PAGES)).catch((error) => {
      loading = undefined;
      throw error;
    });
    return loading.then((site) => site(request, pathname));
  };
}
