/** "Did you mean" for commands and flags: the same edit distance as the core's messages use. */
export { didYouMean, editDistance, suggest } from "../core/suggest.ts";
