/**
 * Bounds on what one request may make the service do, beyond the shape of its document (tokens,
 * depth, aliases, fields: see `DOCUMENT_LIMITS`). Shape alone is not enough: 30 aliases reading one
 * variable that holds 125,000 roles (under 1 MiB) kept the event loop busy for seconds, and every
 * other key waited. Lists are what multiply work, so every list a request carries, in its variables
 * or as a literal in its document, is capped, and so is the total size and nesting of its variables.
 * With these, the largest request allowed costs a few milliseconds.
 */
import { ServiceError } from "../core/errors.ts";
import { type DocumentNode, GraphQLError, Kind, type OperationDefinitionNode, visit } from "graphql";

export const INPUT_LIMITS = {
  /** Items in one list: far above any real input (4 roles, 29 resources, 8 actions). */
  maxListItems: 100,
  /** JSON values in all the variables together (a full permission set is about 300). */
  maxVariableValues: 2000,
  /** Nesting of the variables' JSON (the deepest input, permissions, is 4). */
  maxVariableDepth: 10,
};

/** Variables over a limit: an error like graphql-js's for an invalid variable (`BAD_USER_INPUT`, HTTP 200). */
class InputLimitError extends GraphQLError {
  constructor(message: string) {
    super(message, { extensions: { code: "BAD_USER_INPUT" } });
  }
}

/**
 * The variables `operation` declares, checked with {@link checkVariables}: the error to answer with
 * instead of executing, if any. Undeclared variables are ignored, as GraphQL says; they cost only their
 * share of the (1 MiB) body.
 */
export function variableLimitError(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): GraphQLError | undefined {
  if (!variables) return;
  const declared: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (Object.hasOwn(variables, name)) declared[name] = variables[name];
  }
  try {
    checkVariables(declared);
  } catch (error) {
    if (error instanceof InputLimitError) return error;
    throw error;
  }
}

/**
 * Throws an {@link InputLimitError} when the variables hold a list longer than the limit, too many
 * values or too deep a nesting. Iterative and stops at the first excess, so it costs at most the
 * limits, whatever was sent.
 */
export function checkVariables(variables: Record<string, unknown>): void {
  const { maxListItems, maxVariableValues, maxVariableDepth } = INPUT_LIMITS;
  const stack: [unknown, number, string][] = Object.entries(variables).map(([name, value]) => [value, 1, name]);
  let count = 0;
  while (stack.length) {
    const [value, depth, name] = stack.pop()!;
    if (++count > maxVariableValues) {
      throw new InputLimitError(`Variables are too large: more than ${maxVariableValues} values in all`);
    }
    if (typeof value !== "object" || value === null) continue;
    if (depth > maxVariableDepth) {
      throw new InputLimitError(`Variable "$${name}" is nested too deeply: the limit is ${maxVariableDepth} levels`);
    }
    const items = Array.isArray(value) ? value : Object.values(value);
    if (Array.isArray(value) && value.length > maxListItems) {
      throw new InputLimitError(`Variable "$${name}" holds a list of ${value.length} items; the limit is ${maxListItems}`);
    }
    if (count + items.length > maxVariableValues) {
      throw new InputLimitError(`Variables are too large: more than ${maxVariableValues} values in all`);
    }
    for (const item of items) stack.push([item, depth + 1, name]);
  }
}

/** Validation errors for list literals (arguments or variable defaults) longer than the limit. */
export function listLiteralErrors(document: DocumentNode): GraphQLError[] {
  const errors: GraphQLError[] = [];
  visit(document, {
    [Kind.LIST]: (node) => {
      if (node.values.length > INPUT_LIMITS.maxListItems && errors.length < 5) {
        errors.push(
          new GraphQLError(`A list has ${node.values.length} items; the limit is ${INPUT_LIMITS.maxListItems}`, { nodes: node }),
        );
      }
    },
  });
  return errors;
}

/** The client went away (or timed out) before its body arrived: nothing to log, nobody to answer. */
export class ClientGone extends Error {}

/** Timeouts and the connection cap of the node:http listener; see `ServeOptions`. */
export const CONNECTION_DEFAULTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

/** The connection options of `serve()` with their defaults; throws a clear error for impossible values. */
export function connectionLimits(options: {
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  maxConnections?: number;
}) {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections } = options;
  const limits = {
    ...CONNECTION_DEFAULTS,
    ...stripUndefined({ headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs }),
    maxConnections,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
      throw new ServiceError("USAGE", `serve(): ${name} must be a positive whole number, got ${String(value)}`);
    }
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new ServiceError("USAGE", "serve(): headersTimeoutMs must not exceed requestTimeoutMs (the headers are part of the request)");
  }
  return limits as typeof CONNECTION_DEFAULTS & { maxConnections?: number };
}

const stripUndefined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * Default connection cap: half the process's soft limit on open files (Linux tells it in
 * /proc/self/limits), so sockets can never starve the store of descriptors; 1,000 elsewhere.
 * Between 16 and 10,000.
 */
export async function defaultMaxConnections(): Promise<number> {
  try {
    const { readFile } = await import("node:fs/promises");
    const limits = await readFile("/proc/self/limits", "utf8");
    const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
    if (soft) return Math.min(10_000, Math.max(16, Math.floor(Number(soft) / 2)));
  } catch {
    // Not Linux, or no /proc: use the fixed default.
  }
  return 1000;
}
