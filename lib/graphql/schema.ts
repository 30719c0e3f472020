/**
 * The GraphQL schema and its resolvers. The API-key part matches the reference service's schema
 * (field, argument and input names), so clients written for it work unchanged. Every field names
 * the permission it needs; a key without it gets `null` for that field and a `FORBIDDEN` error
 * (a standard partial result). Input goes through the same valibot schemas as the CLI.
 */
import os from "node:os";
import process from "node:process";
import {
  buildSchema,
  type DocumentNode,
  GraphQLError,
  type GraphQLFieldResolver,
  GraphQLObjectType,
  GraphQLScalarType,
  type GraphQLSchema,
  Kind,
  parse as graphqlParse,
  type SelectionSetNode,
  validate as graphqlValidate,
  type ValidationRule,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
} from "graphql";
import { ACTIONS, type ApiKeyInfo, type AuthAction, type Permission, type Resource, RESOURCES, ROLES, type Role } from "../core/model.ts";
import { ServiceError } from "../core/errors.ts";
import { DescriptionSchema, NameSchema, parseCreateInput, parseInput, PermissionsSchema, RolesSchema } from "../core/input.ts";
import { can, effectivePermissions, escalation, type Grants } from "../core/policy.ts";
import type { KeyStore } from "../store/key-store.ts";
import { VERSION } from "../core/version.ts";
import { createLru } from "../core/_lru.ts";
import { listLiteralErrors } from "./limits.ts";

/** What every resolver sees: the authenticated key and the store. */
export type GraphQLContext = {
  key: ApiKeyInfo;
  store: KeyStore;
  /** This request's `store.list()`, once asked for. */
  listed?: Promise<ApiKeyInfo[]>;
};

const SDL = /* GraphQL */ `
enum Role { ${ROLES.join(" ")} }
enum Resource { ${RESOURCES.join(" ")} }
enum AuthAction { ${ACTIONS.join(" ")} }

"A string id (a UUID for API keys)."
scalar PrefixedID

type Permission {
  resource: Resource!
  actions: [AuthAction!]!
}

type ApiKey {
  id: PrefixedID!
  name: String!
  description: String
  roles: [Role!]!
  createdAt: String!
  "The key's explicit permissions (roles add more; see previewEffectivePermissions)."
  permissions: [Permission!]!
  "The secret: only in the result of the create mutation, never stored, never shown again."
  key: String
}

type UserAccount {
  id: PrefixedID!
  name: String!
  description: String
  roles: [Role!]!
  permissions: [Permission!]!
}

type InfoMemory {
  "Bytes."
  total: Float!
  "Bytes."
  free: Float!
}

type Info {
  hostname: String!
  platform: String!
  release: String!
  "Seconds since the host booted."
  uptime: Float!
  cpus: Int!
  memory: InfoMemory!
  "Runtime and its version, e.g. node 20.19.0 or deno 2.1.0."
  runtime: String!
  "The service's version."
  version: String!
}

input AddPermissionInput {
  resource: Resource!
  actions: [AuthAction!]!
}

input CreateApiKeyInput {
  name: String!
  description: String
  roles: [Role!]
  permissions: [AddPermissionInput!]
  "Replace a key of the same name: new id, new secret; the old secret stops working."
  overwrite: Boolean
}

input UpdateApiKeyInput {
  id: PrefixedID!
  name: String
  description: String
  roles: [Role!]
  permissions: [AddPermissionInput!]
}

input DeleteApiKeyInput {
  ids: [PrefixedID!]!
}

input AddRoleForApiKeyInput {
  apiKeyId: PrefixedID!
  role: Role!
}

input RemoveRoleFromApiKeyInput {
  apiKeyId: PrefixedID!
  role: Role!
}

type Query {
  apiKeys: [ApiKey!]
  apiKey(id: PrefixedID!): ApiKey
  apiKeyPossibleRoles: [Role!]
  apiKeyPossiblePermissions: [Permission!]
  getPermissionsForRoles(roles: [Role!]!): [Permission!]
  previewEffectivePermissions(roles: [Role!], permissions: [AddPermissionInput!]): [Permission!]
  getAvailableAuthActions: [AuthAction!]
  me: UserAccount
  online: Boolean
  info: Info
}

type ApiKeyMutations {
  create(input: CreateApiKeyInput!): ApiKey
  update(input: UpdateApiKeyInput!): ApiKey
  delete(input: DeleteApiKeyInput!): Boolean
  addRole(input: AddRoleForApiKeyInput!): Boolean
  removeRole(input: RemoveRoleFromApiKeyInput!): Boolean
}

type Mutation {
  apiKey: ApiKeyMutations!
}
`;

type Args = Record<string, any>;
type Resolver = (args: Args, context: GraphQLContext, source: any) => unknown;

/** A field's permission: `RESOURCE:ACTION`, where an `_OWN` action is checked against the id the field acts on. */
interface Rule {
  needs: `${Resource}:${AuthAction}`;
  /** For `_ANY` rules: the id the field acts on; holding the matching `_OWN` action suffices when it is the caller's. */
  own?: (args: Args) => readonly string[];
  /** The answer depends on nothing but the caller's key and the arguments: not on the store, the host or the clock. */
  keyOnly?: true;
  resolve: Resolver;
}

function forbidden(message: string): ServiceError {
  return new ServiceError("FORBIDDEN", message);
}

function authorize(rule: Rule, args: Args, context: GraphQLContext): void {
  const [resource, action] = rule.needs.split(":") as [Resource, AuthAction];
  if (can(context.key, resource, action)) return;
  const ownAction = action.replace(/_ANY$/, "_OWN") as AuthAction;
  const ids = rule.own?.(args);
  if (ids && ids.length > 0 && ids.every((id) => id === context.key.id) && can(context.key, resource, ownAction)) return;
  throw forbidden(`Forbidden: this API key lacks the permission ${rule.needs}`);
}

/** Refuses to create or update a key with permissions the caller does not hold itself. */
function noEscalation(actor: Grants, target: Grants): void {
  const extra = escalation(actor, target);
  if (extra.length) {
    const shown = extra.slice(0, 5).join(", ") + (extra.length > 5 ? `, and ${extra.length - 5} more` : "");
    throw forbidden(`Forbidden: an API key can only grant permissions it holds itself; missing ${shown}`);
  }
}

async function target(store: KeyStore, id: string): Promise<ApiKeyInfo> {
  const found = await store.get(id);
  if (!found) throw new ServiceError("NOT_FOUND", `No API key found with id: ${id}`);
  return found;
}

const grants = (roles: Role[] = [], permissions: Permission[] = []): Grants => ({ roles, permissions });

const QUERY: Record<string, Rule> = {
  // Read once per request however many aliases ask: 30 aliases must not mean 30 reads of every key.
  apiKeys: { needs: "API_KEY:READ_ANY", resolve: (_, context) => (context.listed ??= context.store.list()) },
  apiKey: { needs: "API_KEY:READ_ANY", own: (a) => [a.id], resolve: (a, { store }) => store.get(a.id) },
  apiKeyPossibleRoles: { needs: "PERMISSION:READ_ANY", keyOnly: true, resolve: () => [...ROLES] },
  apiKeyPossiblePermissions: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: () => RESOURCES.map((resource) => ({ resource, actions: [...ACTIONS] })),
  },
  getPermissionsForRoles: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: (a) => effectivePermissions(grants(parseInput(RolesSchema, a.roles))),
  },
  previewEffectivePermissions: {
    needs: "PERMISSION:READ_ANY",
    keyOnly: true,
    resolve: (a) =>
      effectivePermissions(grants(parseInput(RolesSchema, a.roles ?? []), parseInput(PermissionsSchema, a.permissions ?? []))),
  },
  getAvailableAuthActions: { needs: "PERMISSION:READ_ANY", keyOnly: true, resolve: () => [...ACTIONS] },
  me: { needs: "ME:READ_OWN", keyOnly: true, resolve: (_, { key }) => key },
  online: { needs: "ONLINE:READ_ANY", keyOnly: true, resolve: () => true },
  info: { needs: "INFO:READ_ANY", resolve: () => hostInfo() },
};

const API_KEY_MUTATIONS: Record<string, Rule> = {
  create: {
    needs: "API_KEY:CREATE_ANY",
    resolve: async ({ input }, { key, store }) => {
      // Overwriting replaces (deletes) whatever key holds the name.
      if (input.overwrite && !can(key, "API_KEY", "DELETE_ANY")) {
        throw forbidden("Forbidden: overwrite replaces an existing key and needs API_KEY:DELETE_ANY");
      }
      // GraphQL sends `null` for an omitted optional field; the shared schemas expect it absent.
      const parsed = parseCreateInput({
        name: input.name,
        description: input.description ?? undefined,
        roles: input.roles ?? undefined,
        permissions: input.permissions ?? undefined,
      });
      noEscalation(key, parsed);
      return store.create(parsed, { overwrite: Boolean(input.overwrite) });
    },
  },
  update: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.id],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.id);
      const patch: { name?: string; description?: string; roles?: Role[]; permissions?: Permission[] } = {};
      if (input.name != null) patch.name = parseInput(NameSchema, input.name);
      if (input.description !== undefined) patch.description = parseInput(DescriptionSchema, input.description ?? "") ?? "";
      if (input.roles != null) patch.roles = parseInput(RolesSchema, input.roles);
      if (input.permissions != null) patch.permissions = parseInput(PermissionsSchema, input.permissions);
      noEscalation(key, current);
      noEscalation(key, { roles: patch.roles ?? current.roles, permissions: patch.permissions ?? current.permissions });
      return store.update(input.id, patch);
    },
  },
  delete: {
    needs: "API_KEY:DELETE_ANY",
    own: (a) => a.input.ids,
    resolve: async ({ input }, { store }) => {
      const ids = [...new Set<string>(input.ids)];
      if (ids.length === 0) throw new ServiceError("INVALID_INPUT", "Give at least one API key id to delete");
      const found = await Promise.all(ids.map((id) => store.get(id)));
      const missing = ids.filter((_, i) => !found[i]);
      if (missing.length) throw new ServiceError("NOT_FOUND", `No API key found with id: ${missing.join(", ")}`);
      const deleted = await Promise.all(ids.map((id) => store.deleteById(id)));
      return deleted.every(Boolean);
    },
  },
  addRole: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.apiKeyId],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.apiKeyId);
      const roles = ROLES.filter((r) => r === input.role || current.roles.includes(r));
      noEscalation(key, current);
      noEscalation(key, { roles, permissions: current.permissions });
      await store.update(current.id, { roles });
      return true;
    },
  },
  removeRole: {
    needs: "API_KEY:UPDATE_ANY",
    own: (a) => [a.input.apiKeyId],
    resolve: async ({ input }, { key, store }) => {
      const current = await target(store, input.apiKeyId);
      noEscalation(key, current);
      await store.update(current.id, { roles: current.roles.filter((r) => r !== input.role) });
      return true;
    },
  },
};

/** The permission each field needs, `"Query.apiKeys": "API_KEY:READ_ANY"`: for docs and tests. */
export const FIELD_PERMISSIONS: Readonly<Record<string, string>> = Object.fromEntries([
  ...Object.entries(QUERY).map(([field, rule]) => [`Query.${field}`, rule.needs]),
  ...Object.entries(API_KEY_MUTATIONS).map(([field, rule]) => [`Mutation.apiKey.${field}`, rule.needs]),
]);

/** A document's fragment definitions by name. */
function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  return fragments;
}

/** Query fields (and introspection) whose answer is a function of the caller's key and the arguments alone. */
const KEY_ONLY_FIELDS = new Set([
  "__typename",
  "__schema",
  "__type",
  ...Object.entries(QUERY).filter(([, rule]) => rule.keyOnly).map(([field]) => field),
]);

/**
 * True when `operation` is a query that selects only fields answered from the caller's key and the
 * arguments (`me`, the role and permission tables, introspection): the same key and the same request
 * then always get the same answer, so the service may remember it for as long as the key's
 * verification stands. Nested fields are plain properties of what those fields return.
 */
export function dependsOnKeyOnly(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  if (operation.operation !== "query") return false;
  const fragments = fragmentsOf(document);
  // Validation has already refused fragment cycles and unknown fragments.
  const keyOnly = (set: SelectionSetNode): boolean =>
    set.selections.every((selection) =>
      selection.kind === Kind.FIELD
        ? KEY_ONLY_FIELDS.has(selection.name.value)
        : selection.kind === Kind.INLINE_FRAGMENT
        ? keyOnly(selection.selectionSet)
        : keyOnly(fragments.get(selection.name.value)!.selectionSet)
    );
  return keyOnly(operation.selectionSet);
}

function hostInfo() {
  const versions = process.versions as Record<string, string | undefined>;
  return {
    hostname: os.hostname(),
    platform: os.platform(),
    release: os.release(),
    uptime: os.uptime(),
    cpus: os.cpus().length,
    memory: { total: os.totalmem(), free: os.freemem() },
    runtime: versions.deno ? `deno ${versions.deno}` : `node ${versions.node}`,
    version: VERSION,
  };
}

const MAX_ID_LENGTH = 200;
const prefixedId = (value: unknown): string => {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw new GraphQLError(`PrefixedID must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return value;
};

function attach(type: GraphQLObjectType, rules: Record<string, Rule>): void {
  const fields = type.getFields();
  for (const [name, rule] of Object.entries(rules)) {
    const field = fields[name];
    field.description = `Requires ${rule.needs}${rule.own ? ` (or ${rule.needs.replace(/_ANY$/, "_OWN")} on the caller's own key)` : ""}.`;
    field.resolve = ((_source, args, context: GraphQLContext) => {
      authorize(rule, args, context);
      return rule.resolve(args, context, _source);
    }) satisfies GraphQLFieldResolver<unknown, GraphQLContext>;
  }
}

let built: GraphQLSchema | undefined;

/**
 * The service's schema (built once). Resolvers expect a {@link GraphQLContext}.
 * @example execute({ schema: createSchema(), document, contextValue: { key, store } })
 */
export function createSchema(): GraphQLSchema {
  if (built) return built;
  const schema = buildSchema(SDL);
  attach(schema.getQueryType()!, QUERY);
  attach(schema.getType("ApiKeyMutations") as GraphQLObjectType, API_KEY_MUTATIONS);
  schema.getMutationType()!.getFields().apiKey.resolve = () => ({});
  const scalar = schema.getType("PrefixedID") as GraphQLScalarType;
  Object.assign(scalar, {
    serialize: prefixedId,
    parseValue: prefixedId,
    parseLiteral: (ast: { kind: string; value?: string }) => {
      if (ast.kind !== Kind.STRING) throw new GraphQLError("PrefixedID must be a string");
      return prefixedId(ast.value);
    },
  });
  return (built = schema);
}

// ---- Parsing and validation: cached, and bounded so one request cannot cost much. ----

/** Limits on one GraphQL document. */
export const DOCUMENT_LIMITS = {
  /** Parser tokens: far above any real query, far below what would make parsing slow. */
  maxTokens: 2000,
  /** Nesting of selections (the schema itself is 4 deep). */
  maxDepth: 10,
  /** Aliased fields: each one re-runs its resolver. */
  maxAliases: 30,
  /** Field selections after expanding fragments. */
  maxFields: 500,
  /** Documents remembered; longer queries are not cached. */
  cacheSize: 500,
  cacheMaxQueryLength: 16_384,
};

const parsed = createLru<string, DocumentNode>(DOCUMENT_LIMITS.cacheSize);
const validations = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly GraphQLError[]>>();

/**
 * `graphql`'s parse with a token limit and an LRU cache of parsed documents. Syntax errors carry
 * `extensions.code = "GRAPHQL_PARSE_FAILED"`.
 */
export function parseDocument(query: string): DocumentNode {
  const cached = parsed.get(query);
  if (cached) return cached;
  let document: DocumentNode;
  try {
    document = graphqlParse(query, { maxTokens: DOCUMENT_LIMITS.maxTokens, noLocation: false });
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    throw new GraphQLError(error.message, {
      source: error.source,
      positions: error.positions,
      extensions: { code: "GRAPHQL_PARSE_FAILED" },
    });
  }
  if (query.length <= DOCUMENT_LIMITS.cacheMaxQueryLength) parsed.set(query, document);
  return document;
}

/** Depth, aliases and field count of a (valid) document's operations, fragments expanded. */
function measure(document: DocumentNode): { depth: number; aliases: number; fields: number } {
  const fragments = fragmentsOf(document);
  const totals = { depth: 0, aliases: 0, fields: 0 };
  const walk = (set: SelectionSetNode, depth: number): void => {
    for (const selection of set.selections) {
      if (totals.fields > DOCUMENT_LIMITS.maxFields) return; // already over: stop counting
      if (selection.kind === Kind.FIELD) {
        totals.fields++;
        if (selection.alias) totals.aliases++;
        totals.depth = Math.max(totals.depth, depth + 1);
        if (selection.selectionSet) walk(selection.selectionSet, depth + 1);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet, depth);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet, depth);
      }
    }
  };
  for (const def of document.definitions) if (def.kind === Kind.OPERATION_DEFINITION) walk(def.selectionSet, 0);
  return totals;
}

/**
 * `graphql`'s validate, remembered per document (documents come from the cache, so a repeated query
 * is validated once), plus limits on depth, aliases and fields. Errors carry
 * `extensions.code = "GRAPHQL_VALIDATION_FAILED"`.
 */
export function validateDocument(
  schema: GraphQLSchema,
  document: DocumentNode,
  rules?: readonly ValidationRule[],
): readonly GraphQLError[] {
  let validated = validations.get(schema);
  if (!validated) validations.set(schema, validated = new WeakMap());
  const cached = validated.get(document);
  if (cached) return cached;
  let errors = graphqlValidate(schema, document, rules, { maxErrors: 20 });
  if (errors.length === 0) {
    const { depth, aliases, fields } = measure(document);
    const limits = DOCUMENT_LIMITS;
    const problem = depth > limits.maxDepth
      ? `Query is too deep: ${depth} levels, the limit is ${limits.maxDepth}`
      : aliases > limits.maxAliases
      ? `Query has too many aliases: ${aliases}, the limit is ${limits.maxAliases}`
      : fields > limits.maxFields
      ? `Query selects too many fields: more than ${limits.maxFields} after expanding fragments`
      : undefined;
    if (problem) errors = [new GraphQLError(problem)];
    else errors = listLiteralErrors(document);
  }
  errors = errors.map((e) =>
    new GraphQLError(e.message, {
      nodes: e.nodes,
      source: e.source,
      positions: e.positions,
      extensions: { code: "GRAPHQL_VALIDATION_FAILED" },
    })
  );
  validated.set(document, errors);
  return errors;
}
