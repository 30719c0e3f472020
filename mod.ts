/**
 * service-api as a library: the key store, its validators, the secret format and the formatter.
 *
 * @example
 * import { createKeyStore, parseCreateInput } from "service-api";
 * const store = createKeyStore();
 * const { key } = await store.create(parseCreateInput({ name: "ci", roles: "ADMIN" }));
 */
export { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES } from "./lib/model.ts";
export type { ApiKeyInfo, AuthAction, CreatedKey, CreateKeyInput, Permission, Resource, Role, StoredKey } from "./lib/model.ts";
export { ERROR_CODES, type ErrorCode, ServiceError } from "./lib/errors.ts";
export {
  CreateKeySchema,
  DescriptionSchema,
  groupPermissions,
  NameSchema,
  parseCreateInput,
  parseInput,
  permissionPairs,
  PermissionsSchema,
  RolesSchema,
} from "./lib/input.ts";
export { generateSecret, isWellFormedSecret, redactSecrets, SECRET_PREFIX, sha256Hex } from "./lib/secret.ts";
export { type AtomicIndex, createKeyStore, createLocalAtomicIndex, type KeyStore, type KeyStoreOptions } from "./lib/store.ts";
export { defaultStoreDir, describeStore, openKeyStore, parseStoreSpec, type StoreSpec } from "./lib/config.ts";
export { fsDriver, type FsDriverOptions } from "./lib/drivers/fs.ts";
export { formatCreated, formatDeleted, formatError, formatList, formatNothingDeleted, type Output } from "./lib/format.ts";
export { type ApikeyContext, type ApikeyFlags, type KeyBackend, runApikey, type TerminalState } from "./lib/apikey.ts";
export { can, canGrant, effectivePairs, effectivePermissions, escalation, type Grants, ROLE_PERMISSIONS } from "./lib/policy.ts";
export {
  createSchema,
  DOCUMENT_LIMITS,
  FIELD_PERMISSIONS,
  type GraphQLContext,
  parseDocument,
  validateDocument,
} from "./lib/graphql.ts";
export {
  createHandler,
  type FetchHandler,
  type HandlerOptions,
  MAX_BODY_BYTES,
  type RunningServer,
  serve,
  type ServeOptions,
} from "./lib/server.ts";
export { type Client, ClientError, type ClientOptions, createClient, type GraphQLErrorInfo } from "./lib/client.ts";
export { createRemoteBackend, openRemoteBackend, type RemoteBackendOptions } from "./lib/remote.ts";
export { createDebug, createLogger } from "./lib/log.ts";
export { VERSION } from "./lib/version.ts";
