/**
 * The budget of one request: the keys its `apiKeys` fields may return in all, counted before anything is
 * resolved. The document's limits (aliases, fields: `documents.ts`) bound its shape, not its answer: 30
 * aliases of every key of a 3,500-key store asked for 105,000 keys, kept the event loop busy for 40 s and
 * failed building a 2 GB answer. Each `apiKeys` field counts its `first` (100 with only `after`), and a
 * field without either counts the keys of the store its filter keeps, read once for the request (the
 * read its resolvers then share). A request over the budget gets one `INVALID_INPUT` error and nothing
 * is executed. The `auditLog` fields have a budget of their own (`audit-log.ts`).
 */
import { type DocumentNode, type FieldNode, getArgumentValues, GraphQLError, Kind, type OperationDefinitionNode, type SelectionSetNode } from "graphql";
import type { ApiKeyInfo } from "../core/model.ts";
import { can } from "../core/policy.ts";
import { parseFilter } from "../core/filter.ts";
import { PAGE_DEFAULT, PAGE_MAX } from "../core/paging.ts";
import { after, type MaybePromise } from "../core/maybe-promise.ts";
import { fragmentsOf } from "./documents.ts";
import { createSchema, type GraphQLContext } from "./schema.ts";

export const REQUEST_BUDGET = {
  /** Keys the `apiKeys` fields of one request may return in all: about 50 ms of work and 2 to 40 MB of JSON. */
  keys: 5_000,
  /** Characters of one answer, a backstop behind the budgets (route.ts): past it the answer is refused. */
  answerChars: 64 * 1024 * 1024,
};

/**
 * The `apiKeys` fields `operation` resolves, fragments expanded: one per response key, since fields that
 * share one are merged into one resolution. Empty for any operation but a query.
 */
export function listFieldsOf(document: DocumentNode, operation: OperationDefinitionNode): FieldNode[] {
  if (operation.operation !== "query") return [];
  const fragments = fragmentsOf(document);
  const byKey = new Map<string, FieldNode>();
  const walk = (set: SelectionSetNode, within: ReadonlySet<string>): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value === "apiKeys" && !byKey.has(selection.alias?.value ?? "apiKeys")) byKey.set(selection.alias?.value ?? "apiKeys", selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet, within);
      } else if (!within.has(selection.name.value)) {
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet, new Set([...within, selection.name.value]));
      }
    }
  };
  walk(operation.selectionSet, new Set());
  return [...byKey.values()];
}

/** A field's arguments, or undefined when they do not coerce (execution then says why). */
function argsOf(field: FieldNode, variables: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  try {
    return getArgumentValues(createSchema().getQueryType()!.getFields().apiKeys, field, variables ?? {});
  } catch {
    return undefined;
  }
}

/** How many keys of `keys` the filter keeps (0 for a filter that is wrong: its resolver refuses it). */
function matching(keys: readonly ApiKeyInfo[], filter: unknown, now: number): number {
  if (filter == null) return keys.length;
  try {
    const matches = parseFilter(String(filter));
    return keys.reduce((n, key) => (matches(key, now) ? n + 1 : n), 0);
  } catch {
    return 0;
  }
}

const overBudget = (asked: number) =>
  new GraphQLError(
    `apiKeys: one request returns at most ${REQUEST_BUDGET.keys} keys in all, and this one asks for ${asked} (a field without first counts every key its filter keeps); ask for pages with first (1 to ${PAGE_MAX}) and after, or send separate requests`,
    { extensions: { code: "INVALID_INPUT" } },
  );

/**
 * The refusal of a request whose `apiKeys` fields (`listFieldsOf`) would return more than the budget,
 * else undefined. A key that may not read keys costs nothing here (its fields are refused as FORBIDDEN);
 * a store that fails the read is left to the resolvers, which report it as they always do.
 */
export function keyBudgetError(
  fields: readonly FieldNode[],
  variables: Record<string, unknown> | undefined,
  context: GraphQLContext,
): MaybePromise<GraphQLError | undefined> {
  if (fields.length === 0 || !can(context.key, "API_KEY", "READ_ANY")) return undefined;
  let paged = 0;
  const unpaged: unknown[] = [];
  for (const field of fields) {
    const args = argsOf(field, variables);
    if (!args) continue;
    if (args.first != null) paged += Number.isInteger(args.first) ? Math.min(Math.max(args.first as number, 0), PAGE_MAX) : 0;
    else if (args.after != null) paged += PAGE_DEFAULT;
    else unpaged.push(args.filter);
  }
  if (paged > REQUEST_BUDGET.keys) return overBudget(paged);
  if (unpaged.length === 0) return undefined;
  const listed = (context.listed ??= context.store.list());
  return after(listed, (keys) => {
    const now = Date.now();
    const asked = unpaged.reduce<number>((n, filter) => n + matching(keys, filter, now), paged);
    return asked > REQUEST_BUDGET.keys ? overBudget(asked) : undefined;
  }, () => undefined);
}
