/**
 * A create as the CLI reports it, for the flag-driven and the interactive create alike: with --overwrite
 * --grace, the time the replaced secret keeps working until, and the `created` record of the `Output`
 * (what `deliver` undoes when the secret cannot be handed over).
 */
import type { CreateKeyInput, CreatedKey } from "../core/model.ts";
import type { KeyBackend } from "../store/key-store.ts";
import type { Output } from "./format-results.ts";

export interface CreateChoice {
  /** Replace a key of the same name. */
  overwrite: boolean;
  /** Whether a key of that name was there to replace when the command looked. */
  replacing: boolean;
  /** --grace: how long the replaced secret keeps working. */
  graceMs?: number;
}

/** What a create made, the end of the replaced secret's grace period (when one was asked for), and its record. */
export interface CreateResult {
  created: CreatedKey;
  graceUntil?: string;
  record: NonNullable<Output["created"]>;
}

/**
 * Creates the key. The grace period is counted from just before the create (the store starts it a moment
 * later), so the old secret works at least until the time reported.
 * @example const { created, graceUntil } = await createKey(store, input, { overwrite: true, replacing: true, graceMs: 600_000 })
 */
export async function createKey(store: KeyBackend, input: CreateKeyInput, { overwrite, replacing, graceMs }: CreateChoice): Promise<CreateResult> {
  const graceFrom = graceMs && replacing ? Date.now() : undefined;
  const created = await store.create(input, { overwrite, ...(graceMs ? { graceMs } : {}) });
  const graceUntil = graceFrom === undefined ? undefined : new Date(graceFrom + graceMs!).toISOString();
  return { created, graceUntil, record: { id: created.id, name: created.name, replaced: replacing, graceUntil } };
}
