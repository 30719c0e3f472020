/**
 * `apikey --create` from flags: the key the flags describe (with --preset, --label, --expires-*,
 * --rate-limit, --credits and --allow-from), --dry-run's preview, --if-not-exists's idempotent success, --overwrite
 * [--grace]'s replacement, and the output in the format asked. Without --name it prompts (./prompts.ts).
 */
import { isServiceError, ServiceError } from "../core/errors.ts";
import { parseCreateInput } from "../core/input.ts";
import { parseLabelFlag } from "../core/labels.ts";
import type { CliBackend } from "./command.ts";
import type { ApikeyFlags, LifecycleValues } from "./flags.ts";
import { createdJson, formatCreated, type Output } from "./format-results.ts";
import { formatEnv, formatExisting } from "./format-scripts.ts";
import { checkOutputTarget } from "./secret-file.ts";
import { createKey } from "./create-key.ts";
import { jsonLine } from "./json-text.ts";
import { noteDropped } from "./rotate.ts";
import { type ApikeyContext, cannotPrompt, missing } from "./terminal-state.ts";

/** Creates the key the flags describe, or asks for it when --name is missing and a person can answer. */
export async function createFromFlags(flags: ApikeyFlags, values: LifecycleValues, store: CliBackend, context: ApikeyContext, asJson: boolean): Promise<Output> {
  const env = flags.format === "env";
  if (flags.name === undefined) {
    if (flags.ifNotExists || env || flags.dryRun) {
      throw new ServiceError("USAGE", `${flags.ifNotExists ? "--if-not-exists" : flags.dryRun ? "--dry-run" : "--format env"} needs --name <name>`);
    }
    if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
    const unable = await cannotPrompt(context);
    if (unable) throw missing("--name", "--name <name> and --roles <roles> or --permissions <RESOURCE:ACTION,...>", unable);
    const { interactiveCreate } = await import("./prompts.ts");
    return interactiveCreate(flags, store);
  }
  const input = {
    ...parseCreateInput(flags),
    ...(values.expiresAt ? { expiresAt: values.expiresAt } : {}),
    ...(flags.label !== undefined ? { labels: parseLabelFlag(String(flags.label)) } : {}),
    ...(values.rateLimits?.length ? { rateLimits: values.rateLimits } : {}), ...(values.credits ? { credits: values.credits } : {}),
    ...(values.allowFrom?.length ? { allowFrom: values.allowFrom } : {}),
  };
  if (flags.dryRun) {
    const options = { overwrite: Boolean(flags.overwrite), ifNotExists: Boolean(flags.ifNotExists), graceMs: values.graceMs };
    return await (await import("./dry-run.ts")).previewCreate(input, options, store, asJson);
  }
  // --if-not-exists with the key there creates and writes nothing: its --output file from the run that
  // made the key is no obstacle (a script run twice). A key made meanwhile is caught below.
  if (flags.ifNotExists) {
    const existing = await store.getByName(input.name);
    if (existing) return formatExisting(existing, asJson, env);
  }
  if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
  const overwrite = Boolean(flags.overwrite);
  const { graceMs } = values;
  // With --overwrite, whether a key is there to replace: the summary says "Replaced" (and, with --grace,
  // until when the old secret works) only then. Its settings, for the note on those the new key lacks.
  const old = overwrite ? await store.getByName(input.name) : null;
  const replacing = old !== null;
  let made;
  try {
    made = await createKey(store, input, { overwrite, replacing, graceMs });
  } catch (error) {
    // Taken, also by a create that won a race with ours: idempotent success, nothing created.
    const existing = flags.ifNotExists && isServiceError(error) && error.code === "NAME_TAKEN" ? await store.getByName(input.name) : null;
    if (!existing) throw error;
    return formatExisting(existing, asJson, env);
  }
  const { created, graceUntil, record } = made;
  const output = env ? formatEnv(created, replacing, graceUntil) : formatCreated(created, asJson, replacing, graceUntil);
  noteDropped(output, old, created);
  // With --if-not-exists a script reads `.created`; a plain create keeps the specified shape exactly.
  if (flags.ifNotExists && asJson) output.stdout = jsonLine({ ...createdJson(created), created: true });
  return { ...output, created: record };
}
