/**
 * Getting a command's output out: write(2) to stdout or stderr, and the delivery of a new key's
 * secret, which is undone when it cannot be written (it was the secret's only copy).
 */
import { writeSync } from "node:fs";
import type { Output } from "./format-results.ts";
import type { KeyBackend } from "../store/key-store.ts";
import { writeSecretFile } from "./secret-file.ts";

/** How long a reader that does not read may keep the command waiting before its output counts as lost. */
const WRITE_PATIENCE_MS = 60_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes all of `text` to stdout (1) or stderr (2) with write(2), on the calling thread, so that a
 * failure is known before the command ends. Returns the error code when the text could not be
 * written (a reader that has gone away, a closed descriptor, a full disk).
 */
export function writeOut(fd: 1 | 2, text: string): string | undefined {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  let waited = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(fd, bytes, at);
    } catch (error) {
      const code = (error as { code?: string }).code ?? "EIO";
      // A full non-blocking pipe: wait for the reader here rather than hand the rest to a stream, whose
      // failure would come too late to report (or, for a new key's secret, to undo the create).
      if (code !== "EAGAIN" || waited >= WRITE_PATIENCE_MS) return code;
      Atomics.wait(pause, 0, 0, 5);
      waited += 5;
    }
  }
}

/**
 * Writes a new key's secret while the store is still open: when it cannot be written, that secret had no
 * other copy, so the create is undone (or, for an overwrite, the message says what is left) and the
 * command fails. Any other output is returned unwritten, for the caller to print.
 */
export async function deliver(
  output: Output,
  store: KeyBackend,
  write: (fd: 1, text: string) => string | undefined,
  file?: { path: string; force: boolean },
): Promise<Output> {
  if (!output.created || !output.stdout) return output;
  if (file) {
    // stdout then carries nothing secret; people are told on stderr where the secret went.
    const failed = writeSecretFile(file.path, output.stdout, file.force);
    const where = `Wrote it to ${file.path} (mode 0600).`;
    if (!failed) return { ...output, stdout: undefined, notice: output.notice ? `${output.notice} ${where}` : where };
    return { notice: await undeliveredCreate(output.created, store, failed, file.path), exitCode: 1 };
  }
  const failed = write(1, output.stdout);
  if (!failed) return { ...output, stdout: undefined };
  return { notice: await undeliveredCreate(output.created, store, failed), exitCode: 1 };
}

/**
 * What to do and say when a new key's secret could not be written (a full disk, a closed pipe): the
 * output was its only copy. A create that replaced nothing is undone, by id and only while the name still
 * holds that key; one that replaced a key cannot be undone (that key is gone, or going at the end of its
 * grace period), so the message says what is left.
 * Returns the one-line message.
 */
export async function undeliveredCreate(
  created: NonNullable<Output["created"]>,
  store: KeyBackend,
  reason: string,
  where = "stdout",
): Promise<string> {
  const { id, name } = created;
  const lost = `Error: Could not write the new key's secret to ${where} (${reason}).`;
  const fix = `Delete it (service-api apikey --delete --name '${name}') or overwrite it again.`;
  if (created.rotated) {
    const old = created.graceUntil ? `keeps working until ${created.graceUntil}` : "no longer works";
    // Another rotation ends the old secret (a key keeps at most one): said, so that it is done knowingly.
    const ends = created.graceUntil ? ", which ends the old secret too, with or without --grace" : "";
    return `${lost} Key '${name}' (id ${id}) has a new secret, which is lost; its old secret ${old}. Rotate it again: service-api apikey --rotate --id ${id}${ends}`;
  }
  if (created.replaced) {
    const old = created.graceUntil ? `which keeps working until ${created.graceUntil}` : "which no longer works";
    return `${lost} Key '${name}' (id ${id}) is stored, replacing the earlier key of that name (${old}), but its secret is lost. ${fix}`;
  }
  try {
    if (await store.deleteById(id)) return `${lost} The key was deleted again, so nothing changed: create it again.`;
    return `${lost} Key '${name}' (id ${id}) was already deleted or replaced by someone else; nothing was undone.`;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `${lost} Undoing the create failed (${why}): key '${name}' (id ${id}) is stored but its secret is lost. ${fix}`;
  }
}
