/**
 * service-api as a library: keys, their validation and policy, and the key store. The service and the
 * client are their own entry points, so importing the store loads neither GraphQL nor an HTTP client:
 *
 *   service-api-keys                 this module
 *   service-api-keys/server          createHandler (fetch-style), serve (node:http or Deno.serve), the schema
 *   service-api-keys/client          createClient, and a key backend over a running service
 *   service-api-keys/drivers/fs      the crash-safe file-system driver (unstorage)
 *   service-api-keys/drivers/redis   the Redis backend
 *
 * @example
 * import { createKeyStore, parseCreateInput } from "service-api-keys";
 * const store = createKeyStore();
 * const { key } = await store.create(parseCreateInput({ name: "ci", roles: "ADMIN" }));
 * (await store.verify(key))?.name; // "ci"
 */
export { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES } from "./lib/core/model.ts";
export { AUDIT_ACTIONS } from "./lib/core/model.ts";
export type {
  Actor,
  ApiKeyInfo,
  AuditAction,
  AuditEvent,
  AuthAction,
  CreatedKey,
  CreateKeyInput,
  KeyPatch,
  Permission,
  Resource,
  Role,
} from "./lib/core/model.ts";
export { checkExpiresAt, expiryFrom, parseDuration, parseGrace, parseSince } from "./lib/core/lifecycle.ts";
export { ERROR_CODES, type ErrorCode, isServiceError, ServiceError } from "./lib/core/errors.ts";
export {
  CreateKeySchema,
  DescriptionSchema,
  NameSchema,
  parseCreateInput,
  parseInput,
  PermissionsSchema,
  RolesSchema,
} from "./lib/core/input.ts";
export { generateSecret, isWellFormedSecret, redactSecrets, SECRET_PREFIX } from "./lib/core/secret.ts";
export { can, effectivePermissions, type Grants, ROLE_PERMISSIONS } from "./lib/core/policy.ts";
export {
  type AtomicIndex,
  type ChangeOptions,
  createKeyStore,
  createLocalAtomicIndex,
  type CreateOptions,
  type KeyBackend,
  type KeyStore,
  type KeyStoreOptions,
  type Refusal,
  type RotateOptions,
  type VerifiedKey,
} from "./lib/store/key-store.ts";
export { type AuditLog, type AuditQuery, createMemoryAuditLog, describeActor, localActor } from "./lib/store/audit.ts";
export { createUseRecorder, type UseRecorder, type UseRecorderOptions } from "./lib/store/last-use.ts";
export { defaultStoreDir, describeStore, openKeyStore, parseStoreSpec, type StoreSpec } from "./lib/store/config.ts";
export { VERSION } from "./lib/core/version.ts";
