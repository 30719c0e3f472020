/**
 * Which queries depend on nothing but the caller's key and the arguments, so that the service may
 * remember their answers for as long as the key's verification stands.
 */
import { type DocumentNode, Kind, type OperationDefinitionNode, type SelectionSetNode } from "graphql";
import { fragmentsOf } from "./documents.ts";
import { QUERY } from "./query-fields.ts";

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
