/**
 * `apikey --delete`: by --id, by --name (the key and the key it replaced while in its grace period),
 * every expired key with --expired (./lifecycle.ts), or, with neither, the key a person picks
 * (./prompts.ts). Nothing matched is exit 1, or exit 0 with --if-exists.
 */
import { ServiceError } from "../core/errors.ts";
import { LookupNameSchema, parseInput } from "../core/input.ts";
import type { CliBackend } from "./command.ts";
import type { ApikeyFlags } from "./flags.ts";
import { formatDeleted, formatNothingDeleted, NO_KEYS_MESSAGE, notFoundMessage, type Output } from "./format-results.ts";
import { formatNothingToDelete } from "./format-scripts.ts";
import { jsonLine } from "./json-text.ts";
import { type ApikeyContext, cannotPrompt, missing } from "./terminal-state.ts";

/** Deletes what the flags choose, or asks which key when they name none and a person can answer. */
export async function deleteFromFlags(flags: ApikeyFlags, store: CliBackend, context: ApikeyContext, asJson: boolean): Promise<Output> {
  if (flags.expired) return await (await import("./lifecycle.ts")).deleteExpired(store, asJson);

  if (flags.id !== undefined) {
    const deleted = await store.deleteById(flags.id);
    if (deleted) return formatDeleted([deleted], asJson);
    return nothingToDelete(`No API key found with id: ${flags.id}`, "NOT_FOUND", flags, asJson);
  }
  if (flags.name === undefined) {
    if (flags.ifExists) throw new ServiceError("USAGE", "--if-exists needs --name <name> or --id <id>");
    const unable = await cannotPrompt(context);
    if (unable) throw missing("--name", "--name <name> or --id <id>", unable);
    const { interactiveDelete } = await import("./prompts.ts");
    return interactiveDelete(flags, store);
  }
  const name = parseInput(LookupNameSchema, flags.name);
  const deleted = await store.deleteByName(name);
  if (deleted) return formatDeleted([deleted], asJson);
  const empty = await store.isEmpty();
  if (flags.ifExists) return nothingToDelete(empty ? NO_KEYS_MESSAGE : notFoundMessage(name), empty ? "NO_KEYS" : "NOT_FOUND", flags, asJson);
  return formatNothingDeleted(name, empty, asJson);
}

/** Nothing matched a delete: exit 0 with --if-exists, else the not-found failure (exit 1). */
function nothingToDelete(message: string, code: "NOT_FOUND" | "NO_KEYS", flags: ApikeyFlags, asJson: boolean): Output {
  if (flags.ifExists) return formatNothingToDelete(message, code, asJson);
  if (asJson) return { stdout: jsonLine({ deleted: 0, error: message, code }), exitCode: 1 };
  return { notice: message, exitCode: 1 };
}
