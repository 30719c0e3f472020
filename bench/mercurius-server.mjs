// The peer for the service benchmark: Mercurius with graphql-jit on Fastify, serving the part of the
// service's schema (lib/graphql/schema.ts, same names and types) that the two benchmark queries use:
// `{ me { id name } }` and `{ me { id name } info { hostname } }`. It does the same real work per request
// a key-checking server must do: the `Authorization: Bearer <secret>` header is parsed, the SHA-256 of
// the secret is looked up in a Map of the keys it knows (401 otherwise), and `me` needs ME:READ_OWN, `info`
// INFO:READ_ANY, as in the service. `info { hostname }` calls os.hostname() once per request, as the service reads it live.
//
// node bench/mercurius-server.mjs --keys keys.json [--port P]
// keys.json: [{ "key": "sapi_…", "id": "…", "name": "…", "roles": ["VIEWER"] }, …] (the secrets are
// hashed at start and dropped). Prints its port on stdout, then serves until killed.
import { createHash, hash as nodeHash } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import Fastify from "fastify";
import mercurius from "mercurius";

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const sha256 = nodeHash ? (text) => nodeHash("sha256", text) : (text) => createHash("sha256").update(text).digest("hex");

// Stored as a real server stores keys: under the SHA-256 of the secret, never the secret itself.
const byHash = new Map();
for (const { key, id, name, roles } of JSON.parse(readFileSync(arg("--keys"), "utf8"))) {
  byHash.set(sha256(key), { id, name, roles });
}
// The roles that hold ME:READ_OWN and INFO:READ_ANY in lib/core/policy.ts (explicit permissions are
// left out: the benchmark's keys have none).
const READS_ME = new Set(["ADMIN", "CONNECT", "VIEWER", "GUEST"]);
const READS_INFO = new Set(["ADMIN", "CONNECT", "VIEWER"]);

const schema = /* GraphQL */ `
  "A string id (a UUID for API keys)."
  scalar PrefixedID

  type UserAccount {
    id: PrefixedID!
    name: String!
  }

  type Info {
    hostname: String!
  }

  type Query {
    me: UserAccount
    info: Info
  }
`;

const resolvers = {
  Query: {
    me: (_root, _args, { key }) => {
      if (!key.roles.some((role) => READS_ME.has(role))) throw new Error("Forbidden: this API key lacks the permission ME:READ_OWN");
      return key;
    },
    info: (_root, _args, { key }) => {
      if (!key.roles.some((role) => READS_INFO.has(role))) throw new Error("Forbidden: this API key lacks the permission INFO:READ_ANY");
      return {};
    },
  },
  Info: {
    hostname: () => os.hostname(),
  },
};

const app = Fastify({ logger: false });
app.decorateRequest("apiKey", null);
app.addHook("preHandler", async (request, reply) => {
  const header = request.headers.authorization;
  const secret = typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7).trim() : "";
  const key = secret ? byHash.get(sha256(secret)) : undefined;
  if (!key) {
    reply.code(401).header("www-authenticate", "Bearer").send({ errors: [{ message: "Unauthenticated: send a valid API key" }] });
    return reply;
  }
  request.apiKey = key;
});
// jit: 1 compiles a query with graphql-jit from its second use on; cache (on by default) keeps parsed
// and validated documents.
app.register(mercurius, {
  schema,
  resolvers,
  jit: 1,
  cache: true,
  graphiql: false,
  context: (request) => ({ key: request.apiKey }),
});

const port = Number(arg("--port") ?? 0) || 0;
await app.listen({ port, host: "127.0.0.1" });
console.log(app.server.address().port);
process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
