/**
 * The short way through for a query the service runs compiled: a POST whose document is in the parse
 * cache, valid, a query, and already compiled (`graphql/compiled.ts`, after COMPILE_AFTER runs through
 * graphql-http). For such a request every step of graphql-http's generic handler has a known outcome:
 * the media type is the one negotiated, the document parses and validates from cache, the operation is a
 * query (so neither a subscription nor a mutation over GET). What is left is the execution, and for a
 * result without errors the answer graphql-http would give: 200, the negotiated content type,
 * `JSON.stringify(result)` (see `onOperation` in `handler.ts`).
 *
 * That handler costs more than the compiled execution itself: it parses Accept again, copies the 26
 * specified rules and the execution arguments, and awaits seven times. Skipped, a request whose answer is
 * not remembered (`{ me { id name } info { hostname } }`) allocates less and waits on fewer microtasks
 * (docs/performance.md).
 *
 * Everything else goes through graphql-http, as does any result with errors: it is handed over as
 * computed (`settledResult`), so the query is not run again and its errors are formatted and given their
 * status exactly as any other request's. tests/compiled-answer.test.ts compares both ways byte for byte.
 */
import type { ExecutionArgs, ExecutionResult, GraphQLSchema } from "graphql";
import { compiledQueryOf, executeCompiled } from "../graphql/compiled.ts";
import { variableLimitError } from "../graphql/limits.ts";
import { cachedDocument, dependsOnKeyOnly, type GraphQLContext, operationOf, validateDocument } from "../graphql/schema.ts";
import type { Params } from "./request.ts";

type MaybePromise<T> = T | Promise<T>;

/** A compiled run: its result, and whether the operation depends on the caller's key alone. */
export interface CompiledRun {
  result: MaybePromise<ExecutionResult>;
  keyOnly: boolean;
}

/** Results with errors, waiting for graphql-http's execute hook (`settledResult`), by context object. */
const settled = new WeakMap<GraphQLContext, ExecutionResult>();

/**
 * Runs the request's query compiled when every condition above holds, else undefined (nothing run).
 * @example const run = runCompiled(schema, paramsFromBody(body, "application/json"), { key, store });
 */
export function runCompiled(schema: GraphQLSchema, params: Params, context: GraphQLContext): CompiledRun | undefined {
  const document = cachedDocument(params.query);
  if (!document) return undefined;
  const operation = operationOf(document, params.operationName);
  if (!operation || operation.operation !== "query") return undefined;
  if (!compiledQueryOf(schema, document, params.operationName)) return undefined;
  if (validateDocument(schema, document).length > 0) return undefined; // remembered: compiled ones passed
  const args: ExecutionArgs = { schema, document, operationName: params.operationName, variableValues: params.variables, contextValue: context, rootValue: undefined };
  if (variableLimitError(args)) return undefined;
  return { result: executeCompiled(args), keyOnly: dependsOnKeyOnly(document, operation) };
}

/** Leaves a result with errors for graphql-http's execute hook, which takes it by the run's context. */
export function handOver(context: GraphQLContext, result: ExecutionResult): void {
  settled.set(context, result);
}

/** The result handed over for this context, once; undefined when there is none (the query runs). */
export function settledResult(context: GraphQLContext): ExecutionResult | undefined {
  const result = settled.get(context);
  if (result) settled.delete(context);
  return result;
}
