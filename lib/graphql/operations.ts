/**
 * A document's operation by the name asked for, looked up once per document (its own module: both the
 * document cache and the variable limits need it, and neither may import the other).
 */
import { type DocumentNode, getOperationAST, type OperationDefinitionNode } from "graphql";

/** Each document's operations found by {@link operationOf}, by the name asked for (undefined: the only one). */
const operations = new WeakMap<DocumentNode, Map<string | undefined, OperationDefinitionNode>>();

/**
 * `graphql`'s `getOperationAST`, remembered per document: a cached document is looked into once, not
 * on every request. Only operations found are remembered, so a document holds at most one entry per
 * operation it defines (plus the unnamed ask), whatever names clients send.
 */
export function operationOf(document: DocumentNode, operationName?: string | null): OperationDefinitionNode | null {
  const name = operationName ?? undefined;
  let byName = operations.get(document);
  const known = byName?.get(name);
  if (known) return known;
  const found = getOperationAST(document, name) ?? null;
  if (found) {
    if (!byName) operations.set(document, byName = new Map());
    byName.set(name, found);
  }
  return found;
}

