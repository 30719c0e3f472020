// A key's create input for store tests: a VIEWER key of that name, with any field replaced.
import type { CreateKeyInput } from "../../lib/core/model.ts";

export const input = (name: string, extra: Partial<CreateKeyInput> = {}): CreateKeyInput => ({
  name,
  roles: ["VIEWER"],
  permissions: [],
  ...extra,
});
