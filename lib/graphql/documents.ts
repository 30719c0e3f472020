/**
 * Parsing and validation of GraphQL documents, bounded so one request cannot cost much. The caps on
 * lists and variables are in `limits.ts`; the one cache of what is derived from a query is `prepared.ts`.
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
} from "graphql";
import { listLiteralErrors } from "./limits.ts";

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
   * operations, `prepared.ts`): a parsed document keeps every token (about 400 bytes each) and a compiled
   * operation its generated code (about 12 KB plus 320 bytes a token), so count alone let 500 documents of
   * 240 compiled operations each hold about 1 GB.
   */
  cacheBytes: 32 * 1024 * 1024,
};

/**
 * `graphql`'s parse with a token limit. Syntax errors carry
 * `extensions.code = "GRAPHQL_PARSE_FAILED"`.
 */
export function parseDocument(query: string): DocumentNode {
  try {
    return graphqlParse(query, { maxTokens: DOCUMENT_LIMITS.maxTokens, noLocation: false });
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    throw new GraphQLError(error.message, {
      source: error.source,
      positions: error.positions,
      extensions: { code: "GRAPHQL_PARSE_FAILED" },
    });
  }
}

/** Tokens between a node's first and last, both included (a parsed node keeps its location). */
export function tokensOf(node: ASTNode): number {
  let count = 0;
  const end = node.loc?.endToken;
  for (let token = node.loc?.startToken ?? null; token; token = token.next) {
    count++;
    if (token === end) break;
  }
  return count;
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

/**
 * `graphql`'s validate with its specified rules, plus limits on depth, aliases, fields and list literals.
 * Errors carry `extensions.code = "GRAPHQL_VALIDATION_FAILED"`. Not cached here: see `prepared.ts`.
 */
export function validateDocument(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  let errors = graphqlValidate(schema, document, specifiedRules, { maxErrors: 20 });
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
