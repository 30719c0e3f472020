/**
 * `service-api-keys/schemas`: the valibot schemas the CLI, GraphQL and the store check input with, for a
 * form or an API of your own that should accept exactly what they accept. `parseInput` runs one and throws
 * a `ServiceError` (INVALID_INPUT) with the same messages; `parseCreateInput`, at the root, is it for a
 * whole new key.
 *
 * @example
 * import { NameSchema, parseInput, RolesSchema } from "service-api-keys/schemas";
 * parseInput(RolesSchema, "viewer, admin"); // ["ADMIN", "VIEWER"]
 * parseInput(NameSchema, "  ci  "); // "ci" (trimmed)
 * allowedFrom(parseInput(AllowFromSchema, "10.0.0.0/8"), "10.1.2.3"); // true (a key's IP allow-list)
 */
export { AllowFromSchema, allowedFrom } from "./allow-from.ts";
export {
  CreateKeySchema,
  DescriptionSchema,
  NameSchema,
  parseInput,
  PermissionsSchema,
  RolesSchema,
} from "./input.ts";
