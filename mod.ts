/**
 * service-api as a library: keys, their validation and policy, and the key store. The service and the
 * client are their own entry points, so importing the store loads neither GraphQL nor an HTTP client:
 *
 *   service-api-keys                 this module
 *   service-api-keys/server          createHandler (fetch-style), serve (node:http or Deno.serve), the schema
 *   service-api-keys/client          createClient, and a key backend over a running service
 *   service-api-keys/drivers/fs      the crash-safe file-system driver (unstorage)
 *   service-api-keys/drivers/redis   the Redis backend
 *   service-api-keys/schemas         the valibot schemas behind parseCreateInput, and parseInput
 *   service-api-keys/lifecycle       durations, expiry and grace; the last-use recorder
 *   service-api-keys/audit           the audit trail: AuditLog, its events, createMemoryAuditLog, actors
 *   service-api-keys/backend         what a store is built on: KeyBackend, AtomicIndex, store locations
 *
 * This module stays small (tests/package-exports.test.ts holds it to 45 names): what most scripts need.
 *
 * @example
 * import { createKeyStore, parseCreateInput } from "service-api-keys";
 * const store = createKeyStore();
 * const { key } = await store.create(parseCreateInput({ name: "ci", roles: "ADMIN" }));
 * (await store.verify(key))?.name; // "ci"
 */
export { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES, VERIFICATION_CODES } from "./lib/core/model.ts";
export type {
  Actor,
  ApiKeyInfo,
  AuthAction,
  CreatedKey,
  CreateKeyInput,
  KeyPatch,
  KeyUsage,
  KeyVerification,
  Permission,
  Resource,
  Role,
  RotatedKey,
  VerificationCode,
} from "./lib/core/model.ts";
export { ERROR_CODES, type ErrorCode, isServiceError, ServiceError } from "./lib/core/errors.ts";
export { parseCreateInput } from "./lib/core/input.ts";
export { generateSecret, isWellFormedSecret, redactSecrets, SECRET_PREFIX } from "./lib/core/secret.ts";
export { can, effectivePermissions, type Grants, ROLE_PERMISSIONS } from "./lib/core/policy.ts";
export {
  type ChangeOptions,
  createKeyStore,
  type CreateOptions,
  type KeyStore,
  type KeyStoreOptions,
  type Refusal,
  type RotateOptions,
  type VerifiedKey,
  type VerifyOptions,
} from "./lib/store/key-store.ts";
export { openKeyStore, parseStoreSpec, type StoreSpec } from "./lib/store/config.ts";
export { VERSION } from "./lib/core/version.ts";
