// Validation (lib/graphql/documents.ts) with graphql-js's specified rules and the document limits, done
// once per query text (lib/graphql/prepared.ts): the errors are remembered with the query.
import { describe, expect, it } from "vitest";
import type { GraphQLError } from "graphql";
import { createSchema, parseDocument, validateDocument } from "../../lib/graphql/schema.ts";
import { prepare } from "../../lib/graphql/prepared.ts";

const schema = createSchema();
const messages = (errors: readonly GraphQLError[] | undefined) => (errors ?? []).map((e) => e.message);

describe("validateDocument", () => {
  it("refuses what the specified rules refuse, with GRAPHQL_VALIDATION_FAILED", () => {
    const errors = validateDocument(schema, parseDocument("{ nope }"));
    expect(messages(errors)).toEqual(['Cannot query field "nope" on type "Query".']);
    expect(errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
    expect(validateDocument(schema, parseDocument("{ me { id } }"))).toEqual([]);
  });

  it("is done once per query text: the same errors come back for the same text", () => {
    const first = prepare("{ me { nope } }").errors;
    expect(messages(first)).toEqual([expect.stringMatching(/^Cannot query field "nope" on type "UserAccount"/)]);
    expect(prepare("{ me { nope } }").errors).toBe(first);
    expect(prepare("{ me { id } }").errors).toBeUndefined();
  });

  it("applies the document limits", () => {
    const aliases = `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: online`).join(" ")} }`;
    expect(messages(validateDocument(schema, parseDocument(aliases)))).toEqual([expect.stringMatching(/too many aliases/)]);
    expect(messages(prepare(aliases).errors)).toEqual([expect.stringMatching(/too many aliases/)]);
  });
});
