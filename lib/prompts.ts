/** Interactive create and delete at a terminal. (Filled in by the interactive-mode issue.) */
import { ServiceError } from "./errors.ts";
import type { Output } from "./format.ts";
import type { ApikeyFlags, KeyBackend } from "./apikey.ts";

export function interactiveCreate(_flags: ApikeyFlags, _store: KeyBackend): Promise<Output> {
  return Promise.reject(new ServiceError("USAGE", "Interactive mode is not available yet: pass --name"));
}

export function interactiveDelete(_flags: ApikeyFlags, _store: KeyBackend): Promise<Output> {
  return Promise.reject(new ServiceError("USAGE", "Interactive mode is not available yet: pass --name"));
}
