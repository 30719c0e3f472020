/**
 * What the service derives from a query, once per query text and operation name: the parsed document,
 * its validation errors, the operation asked for, whether its answer depends on the caller's key alone,
 * and how to execute it (graphql-js, then compiled from its COMPILE_AFTER-th run: `compiled.ts`). This is
 * the one cache of per-document work; it is bounded by count and by estimated heap
 * (`DOCUMENT_LIMITS.cacheSize`, `cacheBytes`), since a compiled operation holds kilobytes of code.
 */
import { type DocumentNode, execute, type ExecutionResult, getOperationAST, GraphQLError, type OperationDefinitionNode, type OperationTypeNode } from "graphql";
import type { CompiledQuery } from "graphql-jit";
import { createWeightedLru } from "../core/_lru.ts";
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { DOCUMENT_LIMITS, parseDocument, tokensOf, validateDocument } from "./documents.ts";
import { COMPILE_AFTER, compileOperation, runCompiled } from "./compiled.ts";
import { dependsOnKeyOnly } from "./key-only.ts";
import { variableLimitError } from "./limits.ts";
import { keyBudgetError, listFieldsOf } from "./request-budget.ts";
import { createSchema, type GraphQLContext } from "./schema.ts";

/** A request's query, ready to run. */
export interface Prepared {
  /** Request errors (syntax, validation, no such operation): the answer, with nothing executed. */
  readonly errors?: readonly GraphQLError[];
  /** The operation's type; undefined with errors. */
  readonly kind?: OperationTypeNode;
  /** The answer depends on the caller's key and the arguments alone (see `key-only.ts`). */
  readonly keyOnly: boolean;
  /**
   * Runs it: variables over the limits (`limits.ts`) get an error like graphql-js's, and a request over its
   * budget (`request-budget.ts`) an `INVALID_INPUT` error; either way nothing is executed.
   */
  execute(variables: Record<string, unknown> | undefined, context: GraphQLContext): MaybePromise<ExecutionResult>;
  /** True once it runs compiled. */
  readonly compiled: boolean;
}

/** Estimated heap of a parsed document and of one compiled operation, by their tokens (see `cacheBytes`). */
const BYTES = { perParsedToken: 400, perCompiled: 12_000, perCompiledToken: 320 };

/** A query text's document, its validation errors and its operations prepared so far, by name. */
interface Entry {
  readonly document: DocumentNode;
  readonly errors: readonly GraphQLError[];
  readonly operations: Map<string | undefined, Prepared>;
  /** Counts what `prepare` derives later (compiled operations) towards the entry's weight. */
  charge(bytes: number): void;
}

const entries = createWeightedLru<string, Entry>(() => ({ entries: DOCUMENT_LIMITS.cacheSize, weight: DOCUMENT_LIMITS.cacheBytes }));

/** The cache's entries and their estimated weight in bytes (at most `DOCUMENT_LIMITS.cacheBytes`). */
export function documentCache(): { documents: number; bytes: number } {
  return { documents: entries.size, bytes: entries.weight };
}

const refused = (errors: readonly GraphQLError[]): Prepared => ({ errors, keyOnly: false, compiled: false, execute: () => ({ errors }) });

/**
 * The query prepared for the operation named (undefined: the only one). Syntax errors and names the
 * document does not define are answered without being remembered: only what the query text defines is.
 * @example const prepared = prepare("{ me { id } }"); await prepared.execute(undefined, { key, store });
 */
export function prepare(query: string, operationName?: string): Prepared {
  let entry = entries.get(query);
  if (!entry) {
    const made = entryOf(query);
    if (made instanceof GraphQLError) return refused([made]);
    entry = made;
  }
  if (entry.errors.length) return (entry.operations.get(undefined) ?? refused(entry.errors));
  const known = entry.operations.get(operationName);
  if (known) return known;
  const operation = getOperationAST(entry.document, operationName);
  if (!operation) return refused([new GraphQLError("Unable to detect operation AST")]);
  const prepared = operationIn(entry, operation, operationName);
  entry.operations.set(operationName, prepared);
  return prepared;
}

/** Parses and validates `query`, remembered unless it is too long; a syntax error is returned. */
function entryOf(query: string): Entry | GraphQLError {
  let document: DocumentNode;
  try {
    document = parseDocument(query);
  } catch (error) {
    if (error instanceof GraphQLError) return error;
    throw error;
  }
  const errors = validateDocument(createSchema(), document);
  const entry: Entry = {
    document,
    errors,
    operations: new Map(),
    charge: (bytes) => entries.get(query) === entry && entries.addWeight(query, bytes),
  };
  if (errors.length) entry.operations.set(undefined, refused(errors));
  if (query.length <= DOCUMENT_LIMITS.cacheMaxQueryLength) {
    entries.set(query, entry, tokensOf(document) * BYTES.perParsedToken + 2 * query.length);
  }
  return entry;
}

/** One operation of a valid document, run by graphql-js until compiled. */
function operationIn(entry: Entry, operation: OperationDefinitionNode, operationName: string | undefined): Prepared {
  const schema = createSchema();
  const { document } = entry;
  const kind = operation.operation;
  // undefined: not compiled yet; null: never (not a query, or graphql-jit declined).
  let compiled: CompiledQuery | null | undefined = kind === "query" ? undefined : null;
  let runs = 0;
  const lists = listFieldsOf(document, operation);
  const compile = () => {
    compiled = compileOperation(schema, document, operationName);
    if (!compiled) return;
    let tokens = tokensOf(operation);
    for (const definition of document.definitions) if (definition.kind === "FragmentDefinition") tokens += tokensOf(definition);
    entry.charge(BYTES.perCompiled + tokens * BYTES.perCompiledToken);
  };
  return {
    kind,
    keyOnly: dependsOnKeyOnly(document, operation),
    get compiled() {
      return !!compiled;
    },
    execute(variables, contextValue) {
      const refusal = variableLimitError(operation, variables);
      if (refusal) return { errors: [refusal] };
      const run = (): MaybePromise<ExecutionResult> => {
        if (compiled === undefined && ++runs >= COMPILE_AFTER) compile();
        const args = { schema, document, operationName, variableValues: variables, contextValue };
        return compiled ? runCompiled(compiled, args) : execute(args);
      };
      if (lists.length === 0) return run();
      return after(keyBudgetError(lists, variables, contextValue), (over) => (over ? { errors: [over] } : run()));
    },
  };
}
