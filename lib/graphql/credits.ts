/**
 * Keys' credits in the schema (`ApiKey.credits`, `credits` on create and update) and the usage controls an
 * input asks for (rate limits and credits), checked like the CLI's. Kept as extensions of schema.ts's types.
 */
import { checkCredits } from "../core/credits.ts";
import { checkRateLimits } from "../core/rate-limits.ts";
import type { KeyPatch } from "../core/model.ts";

export const CREDITS_SDL = /* GraphQL */ `
"day: at each UTC midnight; month: at 00:00 UTC on the 1st."
enum RefillInterval { day month }

"What a key's remaining credits are set to at the start of each period (not added to them)."
type CreditRefill {
  amount: Int!
  interval: RefillInterval!
}

"How many more requests a key may make: each authenticated request costs 1; at 0 the service answers 429 (USAGE_EXCEEDED) until a refill or an update."
type KeyCredits {
  "As this server last wrote it (files and memory: each server writes its count within about a minute; Redis: exact at that write)."
  remaining: Int!
  refill: CreditRefill
}

input CreditRefillInput {
  "1 to 1000000000."
  amount: Int!
  interval: RefillInterval!
}

input CreditsInput {
  "0 to 1000000000."
  remaining: Int!
  refill: CreditRefillInput
}

extend type ApiKey {
  "The key's credits; null: no cap."
  credits: KeyCredits
}

extend input CreateApiKeyInput {
  "A cap on the key's requests, with an optional refill."
  credits: CreditsInput
}

extend input UpdateApiKeyInput {
  "New credits: the count starts again from remaining on every server; null removes them; absent leaves them."
  credits: CreditsInput
}
`;

/** The rate limits and credits a create input gives, checked (INVALID_INPUT). */
export const controlsOf = (input: Record<string, unknown>): { rateLimits?: ReturnType<typeof checkRateLimits>; credits?: ReturnType<typeof checkCredits> } => ({
  ...(input.rateLimits == null ? {} : { rateLimits: checkRateLimits(input.rateLimits) }),
  ...(input.credits == null ? {} : { credits: checkCredits(input.credits) }),
});

/** What an update input changes of them: `credits: null` removes the credits. */
export const controlsPatch = (input: Record<string, unknown>): KeyPatch => ({
  ...controlsOf(input),
  ...(input.credits === null ? { credits: null } : {}),
});
