/**
 * `apikey --export` and `apikey --import`: a store's keys to a JSON-lines file and back (the format is in
 * lib/store/transfer.ts). They work on a store (files, memory, Redis), not over `--url`: an export holds
 * every key's hash, which the service never hands out.
 */
import { createReadStream } from "node:fs";
import { ServiceError } from "../core/errors.ts";
import type { ImportReport, KeyStore, OnConflict } from "../store/key-store.ts";
import { exportLines, parseExport } from "../store/transfer.ts";
import type { ApikeyFlags } from "./flags.ts";
import type { Output } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";
import { checkOutputTarget, writeSecretFile } from "./secret-file.ts";

/** An import file is read whole; this bounds it (about 1.3 million keys), as MAX_LINE_BYTES bounds each line. */
const MAX_IMPORT_BYTES = 512 * 1024 * 1024;
const ON_CONFLICT: readonly OnConflict[] = ["fail", "skip", "overwrite"];

type TransferStore = Partial<Pick<KeyStore, "exportRecords" | "importRecords">>;

function local<K extends keyof TransferStore>(store: TransferStore, method: K, flag: string): NonNullable<TransferStore[K]> {
  const fn = store[method];
  if (!fn) throw new ServiceError("USAGE", `${flag} works on a store (--store or SERVICE_API_STORE), not over --url: the service never hands out key hashes`);
  return fn.bind(store) as NonNullable<TransferStore[K]>;
}

/** Checks --on-conflict before any store is opened. */
export function onConflictOf(flags: ApikeyFlags): OnConflict {
  const value = flags.onConflict ?? "fail";
  if (!ON_CONFLICT.includes(value as OnConflict)) {
    throw new ServiceError("USAGE", `Unknown --on-conflict '${String(value).slice(0, 20)}': use fail, skip or overwrite`);
  }
  return value as OnConflict;
}

/** `--export [--output <file> [--force]] [--with-audit]`. */
export async function exportKeys(flags: ApikeyFlags, store: TransferStore & { audit?: KeyStore["audit"] }, asJson: boolean): Promise<Output> {
  if (asJson && flags.output === undefined) {
    throw new ServiceError("USAGE", "--export prints JSON lines already; --json (a summary object) needs --output <file>");
  }
  if (flags.output !== undefined) checkOutputTarget(flags.output, Boolean(flags.force));
  const records = await local(store, "exportRecords", "--export")();
  const audit = flags.withAudit ? await store.audit!() : undefined;
  const text = [...exportLines(records, audit)].join("");
  const what = `${records.length} key${records.length === 1 ? "" : "s"}${audit ? ` and ${audit.length} audit event${audit.length === 1 ? "" : "s"}` : ""}`;
  if (flags.output === undefined) return { stdout: text, notice: `Exported ${what} (hashes only, never a secret).`, exitCode: 0 };
  const failed = writeSecretFile(flags.output, text, Boolean(flags.force));
  if (failed) throw new ServiceError("INTERNAL", `Could not write ${flags.output}: ${failed}`);
  if (asJson) return { stdout: jsonLine({ exported: records.length, auditEvents: audit?.length ?? 0, file: flags.output }), exitCode: 0 };
  return { notice: `Exported ${what} to ${flags.output} (mode 0600; hashes only, never a secret).`, exitCode: 0 };
}

/** No line of an export comes near this (a key's record is a few KiB): a longer one is not an export. */
const MAX_LINE_BYTES = 1024 * 1024;

/** Where the lines of `chunk` end: `lineBytes` (of the line it continues) then each line's bytes; the last one may go on. */
function lineLengths(chunk: Buffer, lineBytes: number): number[] {
  const lengths: number[] = [];
  let from = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, from)) {
    lengths.push(lineBytes + at - from);
    lineBytes = 0;
    from = at + 1;
  }
  lengths.push(lineBytes + chunk.length - from);
  return lengths;
}

/**
 * The file (or stdin, `-`) as text, read a chunk at a time and refused (INVALID_INPUT) as soon as it passes
 * a bound: 512 MiB in all, or a line of more than 1 MiB. So a stream that never ends, or never ends its
 * line (`/dev/zero`, a pipe), is refused like a regular file, without being held.
 */
async function readImport(path: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0, line = 1, lineBytes = 0;
  try {
    for await (const chunk of (path === "-" ? process.stdin : createReadStream(path)) as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_IMPORT_BYTES) throw new ServiceError("INVALID_INPUT", `--import ${path} is larger than 512 MiB`);
      const lengths = lineLengths(chunk, lineBytes);
      const long = lengths.findIndex((bytes) => bytes > MAX_LINE_BYTES);
      if (long !== -1) throw new ServiceError("INVALID_INPUT", `Line ${line + long} of the import: longer than 1 MiB, which no line of an export is; nothing was imported`);
      line += lengths.length - 1;
      lineBytes = lengths.at(-1)!;
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const code = (error as { code?: string }).code ?? String(error);
    throw new ServiceError("USAGE", `--import ${path}: cannot read it (${code})`);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function summary(report: ImportReport, dryRun: boolean, auditEvents: number): string {
  const parts = [`${dryRun ? "Would import" : "Imported"} ${plural(report.imported.length + report.replaced.length, "key")}`];
  if (report.replaced.length) parts.push(`${dryRun ? "replacing" : "replaced"} ${plural(report.replaced.length, "key")} already there`);
  if (report.skipped.length) parts.push(`${dryRun ? "would skip" : "skipped"} ${plural(report.skipped.length, "key")} already there`);
  let text = `${parts.join(", ")}.`;
  if (auditEvents) {
    text += ` The file's ${plural(auditEvents, "audit event")} ${auditEvents === 1 ? "stays" : "stay"} in the file: a store's trail records only its own changes.`;
  }
  if (dryRun) text += " Nothing was changed (--dry-run).";
  return text;
}

/**
 * Runs `fn` with a signal that SIGINT or SIGTERM aborts: the import then rolls back what it wrote and fails
 * with CANCELLED (exit 130), rather than the process dying with half the keys in. A signal that comes once
 * the import has committed changes nothing: it is done.
 */
async function untilSignal<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  process.on("SIGINT", abort).on("SIGTERM", abort);
  try {
    return await fn(controller.signal);
  } finally {
    process.off("SIGINT", abort).off("SIGTERM", abort);
  }
}

/** `--import <file|-> [--dry-run] [--on-conflict fail|skip|overwrite]`. */
export async function importKeys(flags: ApikeyFlags, store: TransferStore, asJson: boolean): Promise<Output> {
  const onConflict = onConflictOf(flags);
  const importRecords = local(store, "importRecords", "--import");
  const contents = parseExport(await readImport(String(flags.import)));
  const dryRun = Boolean(flags.dryRun);
  const report = await untilSignal((signal) => importRecords(contents.keys, { onConflict, dryRun, signal }));
  const text = summary(report, dryRun, contents.audit.length);
  if (!asJson) return { notice: text, exitCode: 0 };
  const keys = [
    ...report.imported.map((key) => ({ ...key, status: "imported" })),
    ...report.replaced.map((key) => ({ ...key, status: "replaced" })),
    ...report.skipped.map((key) => ({ ...key, status: "skipped" })),
  ].sort((a, b) => a.line - b.line);
  return {
    stdout: jsonLine({
      imported: report.imported.length + report.replaced.length,
      replaced: report.replaced.length,
      skipped: report.skipped.length,
      dryRun,
      keys,
    }),
    exitCode: 0,
  };
}
