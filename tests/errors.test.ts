// The built CLI loads heavy commands (service, prompts, Redis) from separate bundles, each with its own
// copy of lib/errors.ts; an error thrown there must still be recognised as a ServiceError (exit status,
// message) by the start-up bundle's copy.
import { expect, it } from "vitest";
import { ServiceError } from "../lib/errors.ts";
import { ClientError } from "../lib/client.ts";

it("recognises a ServiceError made by another copy of the module, and nothing else", async () => {
  const copy = (await import("../lib/errors.ts?another-copy")) as typeof import("../lib/errors.ts");
  expect(copy.ServiceError).not.toBe(ServiceError);
  const foreign = new copy.ServiceError("CANCELLED", "Cancelled");
  expect(foreign instanceof ServiceError).toBe(true);
  expect(new ServiceError("USAGE", "x") instanceof copy.ServiceError).toBe(true);
  expect(new Error("plain") instanceof ServiceError).toBe(false);
  expect({ code: "USAGE", message: "look-alike" } instanceof ServiceError).toBe(false);
  expect(null instanceof ServiceError).toBe(false);
});

it("a subclass keeps the ordinary check: only ClientErrors are ClientErrors", () => {
  const client = new ClientError("NOT_FOUND", "No API key found");
  expect(client instanceof ClientError).toBe(true);
  expect(client instanceof ServiceError).toBe(true);
  expect(new ServiceError("NOT_FOUND", "No API key found") instanceof ClientError).toBe(false);
});
