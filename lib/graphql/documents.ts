/**
 * Parsing and validation of GraphQL documents: cached, and bounded so one request cannot cost much.
 * The caps on lists and variables are in `limits.ts`.
 */
import {
  type ASTNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  parse as graphqlParse,
  type SelectionSetNode,
  specifiedRules,
  validate as graphqlValidate,
  type ValidationRule,
} from "graphql";
import { createWeightedLru } from "../core/_lru.ts";
import { listLiteralErrors } from "./limits.ts";
export { operationOf } from "./operations.ts";

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
  /**
   * Estimated heap the remembered documents may hold, with what is derived from them (their compiled
   * operations, `compiled.ts`): a parsed document keeps every token (about 400 bytes each) and a compiled
   * operation its generated code (about 12 KB plus 320 bytes a token), so count alone let 500 documents of
   * 240 compiled operations each hold about 1 GB.
   */
  cacheBytes: 32 * 1024 * 1024,
};

/** Estimated heap of a parsed document and of one compiled operation, by their tokens (see `cacheBytes`). */
const BYTES = { perParsedToken: 400, perCompiled: 12_000, perCompiledToken: 320 };

/** Tokens between a node's first and last, both included (a parsed node keeps its location). */
function tokensOf(node: ASTNode): number {
  let count = 0;
  const end = node.loc?.endToken;
  for (let token = node.loc?.startToken ?? null; token; token = token.next) {
    count++;
    if (token === end) break;
  }
  return count;
}

const parsed = createWeightedLru<string, DocumentNode>(
  () => ({ entries: DOCUMENT_LIMITS.cacheSize, weight: DOCUMENT_LIMITS.cacheBytes }),
  (query, document) => remembered.delete(document),
);
/** Results of validation with the specified rules only: see {@link validateDocument}. */
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
  if (query.length <= DOCUMENT_LIMITS.cacheMaxQueryLength) {
    remembered.set(document, query);
    parsed.set(query, document, tokensOf(document) * BYTES.perParsedToken + 2 * query.length);
  }
  return document;
}

/** The parse cache's document for `query`, or undefined (nothing is parsed). */
export function cachedDocument(query: string): DocumentNode | undefined {
  return parsed.get(query);
}

/** The documents held by the parse cache, with their query text (its key). */
const remembered = new WeakMap<DocumentNode, string>();

/** True for a document the parse cache holds: worth deriving more from once (see `compiled.ts`). */
export function isRemembered(document: DocumentNode): boolean {
  return remembered.has(document);
}

/**
 * Counts a compiled operation (and the fragments it may use) towards its document's weight in the parse
 * cache, which may evict it, or older documents, to stay within `cacheBytes`.
 */
export function chargeCompiled(document: DocumentNode, operation: ASTNode): void {
  const query = remembered.get(document);
  if (query === undefined) return;
  let tokens = tokensOf(operation);
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) tokens += tokensOf(definition);
  parsed.addWeight(query, BYTES.perCompiled + tokens * BYTES.perCompiledToken);
}

/** The parse cache's documents and their estimated weight in bytes (at most `DOCUMENT_LIMITS.cacheBytes`). */
export function documentCache(): { documents: number; bytes: number } {
  return { documents: parsed.size, bytes: parsed.weight };
}

/** A document's fragment definitions by name. */
export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  return fragments;
}

/**
 * Depth, aliases and field count of a (valid) document's operations, fragments expanded. Selections
 * under `__schema` and `__type` do not count towards the depth (the standard introspection query is
 * 15 deep, for `ofType` chains); they count towards aliases and fields, and graphql-js's `MaxIntrospectionDepthRule` (among its specified rules since 16.9) bounds their nesting.
 */
function measure(document: DocumentNode): { depth: number; aliases: number; fields: number } {
  const fragments = fragmentsOf(document);
  const totals = { depth: 0, aliases: 0, fields: 0 };
  const walk = (set: SelectionSetNode, depth: number, counted: boolean): void => {
    for (const selection of set.selections) {
      if (totals.fields > DOCUMENT_LIMITS.maxFields) return; // already over: stop counting
      if (selection.kind === Kind.FIELD) {
        totals.fields++;
        if (selection.alias) totals.aliases++;
        if (counted) totals.depth = Math.max(totals.depth, depth + 1);
        const name = selection.name.value;
        const introspection = name === "__schema" || name === "__type";
        if (selection.selectionSet) walk(selection.selectionSet, depth + 1, counted && !introspection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet, depth, counted);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet, depth, counted);
      }
    }
  };
  for (const def of document.definitions) if (def.kind === Kind.OPERATION_DEFINITION) walk(def.selectionSet, 0, true);
  return totals;
}

// A plain copy: reading a frozen array item by item (as `specifiedRules` is) is several times slower.
const SPECIFIED: readonly ValidationRule[] = [...specifiedRules];

/**
 * True for the rules `graphql` validates with by default. graphql-http passes a fresh copy of them
 * on every request, so they are compared item by item, not by identity.
 */
function specifiedOnly(rules: readonly ValidationRule[] | undefined): boolean {
  if (rules === undefined || rules === specifiedRules) return true;
  if (rules.length !== SPECIFIED.length) return false;
  for (let i = 0; i < rules.length; i++) if (rules[i] !== SPECIFIED[i]) return false;
  return true;
}

/**
 * `graphql`'s validate with `rules` (default: the specified rules), plus limits on depth, aliases
 * and fields. Errors carry `extensions.code = "GRAPHQL_VALIDATION_FAILED"`. With the specified
 * rules the result is remembered per schema and document (documents come from the parse cache, so
 * a repeated query is validated once); with any other rules it is computed every time, as a cache
 * keyed by rule sets would grow with callers that build their rules per request.
 */
export function validateDocument(
  schema: GraphQLSchema,
  document: DocumentNode,
  rules?: readonly ValidationRule[],
): readonly GraphQLError[] {
  if (!specifiedOnly(rules)) return validateUncached(schema, document, rules);
  let validated = validations.get(schema);
  if (!validated) validations.set(schema, validated = new WeakMap());
  const cached = validated.get(document);
  if (cached) return cached;
  const errors = validateUncached(schema, document, specifiedRules);
  validated.set(document, errors);
  return errors;
}

function validateUncached(
  schema: GraphQLSchema,
  document: DocumentNode,
  rules: readonly ValidationRule[] | undefined,
): readonly GraphQLError[] {
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
  return errors.map((e) =>
    new GraphQLError(e.message, {
      nodes: e.nodes,
      source: e.source,
      positions: e.positions,
      extensions: { code: "GRAPHQL_VALIDATION_FAILED" },
    })
  );
}
