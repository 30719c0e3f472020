/**
 * `service-api-keys/lifecycle`: a key's life after it is created, as the CLI and the service read it:
 * durations and instants (`--expires-in`, `--grace`, `--since`), the expiry they give, and the recorder
 * that writes each key's last use and usage off the request path.
 *
 * @example
 * import { createKeyStore } from "service-api-keys";
 * import { createUseRecorder, expiryFrom } from "service-api-keys/lifecycle";
 * const store = createKeyStore();
 * await store.create({ name: "ci run", roles: ["ADMIN"], permissions: [], expiresAt: expiryFrom({ expiresIn: "1h" }, Date.now()) });
 * const uses = createUseRecorder(store); // uses.seen(id) per request
 */
export { checkExpiresAt, expiryFrom, parseDuration, parseGrace, parseSince } from "../core/lifecycle.ts";
export { createUseRecorder, type UseRecorder, type UseRecorderOptions } from "./last-use.ts";
export type { KeyUse } from "./types.ts";
