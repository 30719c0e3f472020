// The built CLI loads heavy commands (service, prompts, Redis) from separate bundles, each with its own
// copy of lib/core/errors.ts; an error thrown there must still be recognised as a ServiceError (exit status,
// message) by the start-up bundle's copy. isServiceError() does that by shape, without a prototype brand.
import { expect, it } from "vitest";
import { isServiceError, ServiceError } from "../../lib/core/errors.ts";
import { ClientError } from "../../lib/client/client.ts";

it("recognises a ServiceError made by another copy of the module, and nothing else", async () => {
  const copy = (await import("../../lib/core/errors.ts?another-copy")) as typeof import("../../lib/core/errors.ts");
  expect(copy.ServiceError).not.toBe(ServiceError);
  const foreign = new copy.ServiceError("CANCELLED", "Cancelled");
  expect(isServiceError(foreign)).toBe(true);
  expect(copy.isServiceError(new ServiceError("USAGE", "x"))).toBe(true);
  expect(isServiceError(new Error("plain"))).toBe(false);
  expect(isServiceError({ code: "USAGE", message: "look-alike", exitCode: 2 })).toBe(false); // not an Error
  expect(isServiceError(Object.assign(new Error("fs"), { code: "ENOENT" }))).toBe(false); // a system error's code
  expect(isServiceError(null)).toBe(false);
});

it("a subclass keeps the ordinary check: only ClientErrors are ClientErrors", () => {
  const client = new ClientError("NOT_FOUND", "No API key found");
  expect(client instanceof ClientError).toBe(true);
  expect(client instanceof ServiceError).toBe(true);
  expect(isServiceError(client)).toBe(true);
  expect(new ServiceError("NOT_FOUND", "No API key found") instanceof ClientError).toBe(false);
});
