/**
 * Compiled execution: a cached, validated query document is compiled once with graphql-jit and its
 * compiled form runs it instead of graphql-js's `execute`. graphql-js stays the reference: whatever
 * graphql-jit does not compile, and every answer it gives with errors, goes to graphql-js, so that
 * answers are byte-identical to graphql-js's (tests/graphql-compiled.test.ts compares them).
 */
import { BREAK, type DocumentNode, execute, type ExecutionArgs, type ExecutionResult, type GraphQLSchema, Kind, visit } from "graphql";
import { type CompiledQuery, compileQuery, isCompiledQuery } from "graphql-jit";
import { chargeCompiled, isRemembered, operationOf } from "./documents.ts";

/** A document is compiled on its this-many-th execution: one-off documents never pay for a compile. */
export const COMPILE_AFTER = 3;

type Entry = { runs: number; compiled?: CompiledQuery | null };
/** Per schema, per (parse-cached) document, per operation name asked for: bounded like the document cache. */
const entries = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string | undefined, Entry>>>();

function compiledFor(args: ExecutionArgs): CompiledQuery | null {
  const { schema, document } = args;
  const operation = operationOf(document, args.operationName);
  // Only queries of documents in the parse cache (mutations run once and stay with graphql-js).
  if (!operation || operation.operation !== "query" || !isRemembered(document)) return null;
  let bySchema = entries.get(schema);
  if (!bySchema) entries.set(schema, bySchema = new WeakMap());
  let byName = bySchema.get(document);
  if (!byName) bySchema.set(document, byName = new Map());
  // operationOf found the operation, so the name is one the document defines (or none): bounded.
  const name = args.operationName ?? undefined;
  let entry = byName.get(name);
  if (!entry) byName.set(name, entry = { runs: 0 });
  if (entry.compiled !== undefined) return entry.compiled;
  if (++entry.runs < COMPILE_AFTER) return null;
  if (!jitAnswersAlike(document)) return (entry.compiled = null);
  let compiled: CompiledQuery | null = null;
  try {
    const made = compileQuery(schema, document, name);
    if (isCompiledQuery(made)) compiled = made;
    if (compiled) chargeCompiled(document, operation);
  } catch {
    // Anything graphql-jit cannot compile runs on graphql-js.
  }
  entry.compiled = compiled;
  return compiled;
}

/**
 * False for a document graphql-jit (0.8) answers differently from graphql-js without an error to catch
 * it, which therefore stays on graphql-js:
 * - any directive (`@skip`, `@include`): a field skipped before another of the same response key moves
 *   that key to the skipped one's place, and `@include(if: $v)` with `$v` null answers data where
 *   graphql-js refuses the argument;
 * - a response key `__proto__` (an alias): set on a plain object, it is dropped or moved;
 * - a variable named after a member of `Object.prototype` (`$__proto__`, `$constructor`, `$toString`…):
 *   graphql-jit keeps coerced variables in a plain object, so `$__proto__` is lost and a non-null
 *   `$constructor` passed as null is not refused (it reads the inherited member);
 * - a variable inside a list or input object literal (`roles: [GUEST, $r]`): graphql-jit passes a null
 *   `$r` (nullable, with a default) into a non-null item where graphql-js refuses the argument; today the
 *   resolvers refuse it too, so answers agree, but only by luck;
 * - a string or a name holding `__MAGIC_`: graphql-jit writes literals into the code it generates with
 *   `JSON.stringify` and then turns its own placeholders (`"__MAGIC_DATE__<uuid>…"`) into code, so the
 *   rest of such a string ran as JavaScript in the service, for any key (`__type(name:)` needs no
 *   permission). Found by differential fuzzing (tests/graphql-jit-diff.test.ts).
 * Each case is in tests/graphql-compiled.test.ts, compared with graphql-js.
 */
function jitAnswersAlike(document: DocumentNode): boolean {
  let alike = true;
  const differs = () => ((alike = false), BREAK);
  visit(document, {
    Directive: differs,
    Field: (field) => (field.alias?.value === "__proto__" ? differs() : undefined),
    VariableDefinition: (definition) => (definition.variable.name.value in Object.prototype ? differs() : undefined),
    StringValue: (string) => (string.value.includes(JIT_PLACEHOLDER) ? differs() : undefined),
    Variable: (_variable, _key, _parent, _path, ancestors) =>
      ancestors.some((node) => "kind" in node && (node.kind === Kind.LIST || node.kind === Kind.OBJECT)) ? differs() : undefined,
    Name: (name) => (name.value.includes(JIT_PLACEHOLDER) ? differs() : undefined),
  });
  return alike;
}
/** What graphql-jit's placeholders for Date, NaN and the infinities begin with. */
const JIT_PLACEHOLDER = "__MAGIC_";

/**
 * Runs `args` compiled when it can, else with graphql-js's `execute`. A compiled run that ends with
 * any error is run again by graphql-js (only queries are compiled, and their resolvers only read),
 * so errors, their order, messages, paths and the nulls they leave are exactly graphql-js's:
 * graphql-jit's own differ (no `locations` on field errors, `data` before `errors`).
 */
export function executeCompiled(args: ExecutionArgs): ExecutionResult | Promise<ExecutionResult> {
  const compiled = compiledFor(args);
  if (!compiled) return execute(args);
  const result = compiled.query(args.rootValue, args.contextValue, args.variableValues);
  if (result instanceof Promise) return result.then((settled) => (settled.errors ? execute(args) : settled));
  return result.errors ? execute(args) : result;
}

/** The compiled form of a document's operation, once made (null before, or when graphql-jit declined). */
export function compiledQueryOf(schema: GraphQLSchema, document: DocumentNode, operationName?: string): CompiledQuery | null {
  return entries.get(schema)?.get(document)?.get(operationName)?.compiled ?? null;
}
