/**
 * service-api as a library: the key store, its validators, the secret format and the formatter.
 *
 * @example
 * import { createKeyStore, parseCreateInput } from "service-api";
 * const store = createKeyStore();
 * const { key } = await store.create(parseCreateInput({ name: "ci", roles: "ADMIN" }));
 */
export { ACTIONS, RESOURCES, ROLE_DESCRIPTIONS, ROLES } from "./lib/core/model.ts";
export type { ApiKeyInfo, AuthAction, CreatedKey, CreateKeyInput, Permission, Resource, Role, StoredKey } from "./lib/core/model.ts";
export { ERROR_CODES, type ErrorCode, isServiceError, ServiceError } from "./lib/core/errors.ts";
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
} from "./lib/core/input.ts";
export { generateSecret, isWellFormedSecret, redactSecrets, SECRET_PREFIX, sha256Hex } from "./lib/core/secret.ts";
export { type AtomicIndex, createKeyStore, createLocalAtomicIndex, type KeyStore, type KeyStoreOptions, type VerifiedKey } from "./lib/store/key-store.ts";
export { defaultStoreDir, describeStore, openKeyStore, parseStoreSpec, type StoreSpec } from "./lib/store/config.ts";
export { fsDriver, type FsDriverOptions } from "./lib/store/drivers/fs.ts";
export { formatCreated, formatDeleted, formatError, formatList, formatNothingDeleted, type Output } from "./lib/cli/format.ts";
export { type ApikeyContext, type ApikeyFlags, type KeyBackend, runApikey, type TerminalState } from "./lib/cli/commands/apikey.ts";
export { can, canGrant, effectivePairs, effectivePermissions, escalation, type Grants, ROLE_PERMISSIONS } from "./lib/core/policy.ts";
export {
  createSchema,
  DOCUMENT_LIMITS,
  FIELD_PERMISSIONS,
  type GraphQLContext,
  parseDocument,
  validateDocument,
} from "./lib/graphql/schema.ts";
export { type FetchHandler, type HandlerOptions, MAX_BODY_BYTES } from "./lib/http/types.ts";
export { createHandler } from "./lib/http/fetch.ts";
export { type RunningServer, serve, type ServeOptions } from "./lib/http/serve.ts";
export { type Client, ClientError, type ClientOptions, createClient, type GraphQLErrorInfo } from "./lib/client/client.ts";
export { createRemoteBackend, openRemoteBackend, type RemoteBackendOptions } from "./lib/client/remote.ts";
export { createDebug, createLogger } from "./lib/core/log.ts";
export { VERSION } from "./lib/core/version.ts";
