// Standard introspection, as GraphiQL, Apollo, urql, codegen, Insomnia and Postman send it, through the
// real fetch handler: none of these may be refused by the depth limit ("Query is too deep").
import { beforeAll, describe, expect, it } from "vitest";
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery, parse, print, printSchema, visit } from "graphql";
import { createKeyStore } from "../../lib/store/key-store.ts";
import { createHandler } from "../../lib/http/fetch.ts";
import { createSchema } from "../../lib/graphql/schema.ts";

let key: string;
let handler: (request: Request) => Promise<Response>;

beforeAll(async () => {
  const store = createKeyStore();
  handler = createHandler({ store, onError: () => {} });
  key = (await store.create({ name: "guest", roles: ["GUEST"], permissions: [] })).key;
});

async function post(query: string, accept = "application/graphql-response+json, application/json") {
  const response = await handler(
    new Request("http://service/graphql", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, accept },
      body: JSON.stringify({ query }),
    }),
  );
  return { status: response.status, body: await response.json() };
}

/** What Apollo Client and urql do to every document: `__typename` in every selection set that lacks it. */
function withTypename(query: string): string {
  return print(visit(parse(query), {
    SelectionSet(node, _key, parent) {
      if (parent && "kind" in parent && parent.kind === "OperationDefinition") return;
      if (node.selections.some((s) => s.kind === "Field" && s.name.value === "__typename")) return;
      return { ...node, selections: [...node.selections, { kind: "Field", name: { kind: "Name", value: "__typename" } }] };
    },
  }));
}

const ALL_OPTIONS = {
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
};

describe("standard introspection", () => {
  for (
    const [name, query] of [
      ["default options", getIntrospectionQuery()],
      ["all options", getIntrospectionQuery(ALL_OPTIONS)],
      ["all options with __typename (Apollo, urql)", withTypename(getIntrospectionQuery(ALL_OPTIONS))],
      ["default options with __typename", withTypename(getIntrospectionQuery())],
    ] as const
  ) {
    it(`is answered: ${name}, and round-trips through buildClientSchema and printSchema`, async () => {
      const { status, body } = await post(query);
      expect(body.errors).toBeUndefined();
      expect(status).toBe(200);
      const client = buildClientSchema(body.data as IntrospectionQuery);
      expect(printSchema(client)).toBe(printSchema(createSchema()));
    });
  }

  it("still bounds introspection: graphql-js's MaxIntrospectionDepthRule refuses deep fields cycles", async () => {
    const deep = "{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }";
    const { status, body } = await post(deep);
    expect(status).toBe(400);
    expect(body.errors[0].message).toMatch(/Maximum introspection depth exceeded/);
    expect(body.errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
  });

  it("keeps the alias and field caps under __schema (no amplification by aliases)", async () => {
    const aliases = Array.from({ length: 31 }, (_, i) => `a${i}: types { name }`).join(" ");
    const { status, body } = await post(`{ __schema { ${aliases} } }`);
    expect(status).toBe(400);
    expect(body.errors[0].message).toMatch(/too many aliases/);
  });

  it("keeps the field cap under __schema (fragments expanded)", async () => {
    const query = `{ __schema { types { ...C } } }
      fragment A on __Type { name kind description specifiedByURL }
      fragment B on __Type { ${"...A ".repeat(10)} }
      fragment C on __Type { ${"...B ".repeat(15)} }`;
    const { status, body } = await post(query);
    expect(status).toBe(400);
    expect(body.errors[0].message).toMatch(/too many fields/);
  });
});
