/**
 * The usage-control flags of `apikey --create` and `--update`: `--rate-limit`/`--no-rate-limit` and
 * `--credits <n>` with `--refill <n>/<day|month>`, or `--no-credits`. A value out of form exits 2 naming
 * the form, before anything is changed.
 */
import { type Credits, parseCredits, parseRefill } from "../core/credits.ts";
import { ServiceError } from "../core/errors.ts";

/** Their lines of `apikey --help`. */
export const CONTROL_OPTIONS = [
  { flag: "--rate-limit [limits]", help: "create, update: at most n requests per duration, e.g. 10/1s or 10/1s,1000/1h (over it: 429)" },
  { flag: "--no-rate-limit", help: "update: remove the key's rate limits" },
  { flag: "--credits [n]", help: "create, update: the key may make n more requests (each costs 1; at 0: 429 USAGE_EXCEEDED); update sets the count anew" },
  { flag: "--refill <n/interval>", help: "with --credits: set the count back to n at each UTC midnight (n/day) or 1st of the month (n/month)" },
  { flag: "--no-credits", help: "update: remove the key's credits (no cap)" },
];

/** `--credits`/`--refill`/`--no-credits` as a create input or patch value: credits, null (remove) or undefined (not given). */
export function creditsFrom(flags: { credits?: string | boolean; refill?: string }): Credits | null | undefined {
  if (flags.credits === false) {
    if (flags.refill !== undefined) throw new ServiceError("USAGE", "--no-credits removes the key's credits: it takes no --refill");
    return null;
  }
  if (flags.credits === undefined || flags.credits === true) {
    if (flags.refill !== undefined) throw new ServiceError("USAGE", "--refill goes with --credits, the count to start from: e.g. --credits 1000 --refill 1000/day");
    return undefined;
  }
  const remaining = parseCredits(flags.credits);
  return flags.refill === undefined ? { remaining } : { remaining, refill: parseRefill(flags.refill) };
}
