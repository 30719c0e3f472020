/**
 * Compiled execution: a query's operation is compiled once with graphql-jit (by `prepared.ts`, on its
 * COMPILE_AFTER-th run) and its compiled form runs it instead of graphql-js's `execute`. graphql-js stays
 * the reference: whatever graphql-jit does not compile, and every answer it gives with errors, goes to
 * graphql-js, so that answers are byte-identical to graphql-js's (tests/graphql/compiled.test.ts and the
 * differential fuzzer, tests/graphql/compiled-fuzz.test.ts, compare them).
 */
import { BREAK, type DocumentNode, execute, type ExecutionArgs, type ExecutionResult, type GraphQLSchema, Kind, visit } from "graphql";
import { type CompiledQuery, compileQuery, isCompiledQuery } from "graphql-jit";
import { after, type MaybePromise } from "../core/maybe-promise.ts";

/** An operation is compiled on its this-many-th execution: one-off documents never pay for a compile. */
export const COMPILE_AFTER = 3;

/** The compiled form of a (valid) query's operation, or null when graphql-jit declines or would answer differently. */
export function compileOperation(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): CompiledQuery | null {
  if (!jitAnswersAlike(document)) return null;
  try {
    const made = compileQuery(schema, document, operationName);
    return isCompiledQuery(made) ? made : null;
  } catch {
    return null; // anything graphql-jit cannot compile runs on graphql-js
  }
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
 *   permission). Found by differential fuzzing (tests/graphql/compiled-fuzz.test.ts).
 * Each case is in tests/graphql/compiled.test.ts, compared with graphql-js.
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
 * Runs `args` with its compiled form. A compiled run that ends with any error is run again by graphql-js
 * (only queries are compiled, and their resolvers only read), so errors, their order, messages, paths and
 * the nulls they leave are exactly graphql-js's: graphql-jit's own differ (no `locations` on field
 * errors, `data` before `errors`).
 */
export function runCompiled(compiled: CompiledQuery, args: ExecutionArgs): MaybePromise<ExecutionResult> {
  const result = compiled.query(args.rootValue, args.contextValue, args.variableValues) as MaybePromise<ExecutionResult>;
  return after(result, (settled) => (settled.errors ? execute(args) : settled));
}
