// validateDocument honours the rules it is given: its cache of results must not hand the result of
// one rule set to a caller of another (graphql-http passes `validationRules` through `rules`).
import { describe, expect, it } from "vitest";
import { GraphQLError, specifiedRules, type ValidationRule } from "graphql";
import { createSchema, parseDocument, validateDocument } from "../lib/graphql/schema.ts";

const rejectAll: ValidationRule = (context) => ({
  Document(node) {
    context.reportError(new GraphQLError("rejected by a custom rule", { nodes: node }));
  },
});

const schema = createSchema();
const messages = (errors: readonly GraphQLError[]) => errors.map((e) => e.message);

describe("validateDocument", () => {
  it("applies a custom rule even after the same document passed the default rules", () => {
    const document = parseDocument("{ online }");
    expect(validateDocument(schema, document)).toEqual([]);
    const errors = validateDocument(schema, document, [...specifiedRules, rejectAll]);
    expect(messages(errors)).toEqual(["rejected by a custom rule"]);
    expect(errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
  });

  it("passes a document with the default rules after a custom rule rejected it", () => {
    const document = parseDocument("{ me { id } }");
    expect(messages(validateDocument(schema, document, [rejectAll]))).toEqual(["rejected by a custom rule"]);
    expect(validateDocument(schema, document)).toEqual([]);
    expect(validateDocument(schema, document, [...specifiedRules])).toEqual([]);
    expect(messages(validateDocument(schema, document, [rejectAll]))).toEqual(["rejected by a custom rule"]);
  });

  it("still remembers the result of the default rules when they come as a fresh copy, as graphql-http sends them", () => {
    const document = parseDocument("{ online info { version } }");
    const first = validateDocument(schema, document, [...specifiedRules]);
    expect(validateDocument(schema, document, [...specifiedRules])).toBe(first);
    expect(validateDocument(schema, document)).toBe(first);
  });

  it("applies the document limits whatever the rules", () => {
    const aliases = `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: online`).join(" ")} }`;
    const document = parseDocument(aliases);
    expect(messages(validateDocument(schema, document, []))).toEqual([expect.stringMatching(/too many aliases/)]);
    expect(messages(validateDocument(schema, document))).toEqual([expect.stringMatching(/too many aliases/)]);
  });
});
