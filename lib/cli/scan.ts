/**
 * `service-api apikey --scan [<path>...]`: finds secrets in files, folders and standard input, and says of
 * each whether it is live in the store, expired or unknown; `--revoke` deletes the live ones. The store is
 * asked by the secret's SHA-256 only (`verify`), and opened only when a secret is found. A secret is never
 * printed whole, logged or sent anywhere: the report shows it masked (`sapi_Gj…1Ga`).
 * Exit status 1 when a live key was found (revoked or not), 0 when none: a pre-commit hook or CI step.
 */
import { isServiceError, ServiceError } from "../core/errors.ts";
import { maskToken } from "../core/scan-pattern.ts";
import { createLru } from "../core/_lru.ts";
import type { Output } from "./format-results.ts";
import { locateAgain, type Reader, scanSource, type Found } from "./scan-source.ts";
import { type Input, noneSkipped, walk } from "./scan-walk.ts";
import { displayPath } from "./scan-text.ts";
import { type Finding, formatScan, type ScanResult, whereOf } from "./scan-report.ts";

export type { Finding, ScanResult, Status } from "./scan-report.ts";

/** What a scan needs of a store: look a secret up (by its hash), and delete a key with a reason for the audit trail. */
export interface ScanStore {
  verify(secret: string): Promise<{ id: string; name: string } | null>;
  refusal(secret: string, options?: { reportReuse?: boolean }): Promise<{ reason: "expired" | "disabled" | "unknown"; retired?: { id: string; name: string } }>;
  deleteById(id: string, options?: { reason?: string }): Promise<{ id: string } | null>;
}

/** Findings reported one by one; past this they are counted, so a file of a million secrets keeps memory small. */
const MAX_FINDINGS = 10_000;
/** Secrets whose lookup is remembered, so a secret repeated in a history is looked up once. */
const LOOKUPS_REMEMBERED = 10_000;

/** A reader of an open file from its start (or from where it is, for a pipe). */
function fileReader(input: Input): Reader {
  let position = 0;
  return async (buffer, offset, length) => {
    const { bytesRead } = await input.handle!.read(buffer, offset, length, input.seekable ? position : null);
    position += bytesRead;
    return bytesRead;
  };
}

/** A reader of standard input, through its stream (which copes with a non-blocking pipe or terminal). */
function stdinReader(): Reader {
  const chunks = process.stdin[Symbol.asyncIterator]();
  let pending: Buffer | null = null;
  return async (buffer, offset, length) => {
    if (!pending?.length) {
      const next = await chunks.next();
      if (next.done) return 0;
      pending = next.value as Buffer;
    }
    const n = pending.copy(buffer, offset, 0, Math.min(length, pending.length));
    pending = pending.subarray(n);
    return n;
  };
}

/**
 * Scans `operands` (paths, `-` for stdin; none: the current folder) and, with `revoke`, deletes the live
 * keys found. `openStore` is called once, at the first secret found.
 */
export async function scan(operands: readonly string[], openStore: () => Promise<ScanStore>, revoke: boolean): Promise<ScanResult> {
  const { stat } = await import("node:fs/promises");
  for (const operand of operands) {
    if (operand !== "-") await stat(operand).catch((error) => {
      if ((error as { code?: string }).code === "ENOENT") throw new ServiceError("INVALID_INPUT", `No such file or folder: ${displayPath(operand)}`);
    });
  }
  const result: ScanResult = { findings: [], omitted: 0, counts: { live: 0, disabled: 0, expired: 0, revoked: 0, unknown: 0 }, files: 0, bytes: 0, skipped: noneSkipped(), revoked: 0 };
  let store: Promise<ScanStore> | undefined;
  /** Each live key found: where first, and how many times (bounded by the keys in the store). */
  const live = new Map<string, { first: Finding; count: number }>();
  let shown = 0;
  const lookups = createLru<string, Promise<Pick<Finding, "status" | "id" | "name">>>(LOOKUPS_REMEMBERED);
  const lookUp = (secret: string) => {
    let answer = lookups.get(secret);
    if (!answer) {
      answer = (async () => {
        const keys = await (store ??= openStore());
        const key = await keys.verify(secret);
        if (key) return { status: "live" as const, id: key.id, name: key.name };
        // Looking a secret up is no presentation to the service: no `reuse` event for a retired one.
        const refused = await keys.refusal(secret, { reportReuse: false });
        // What the store knows, as the service says when it is presented: a deleted or replaced key's.
        if (refused.reason === "unknown" && refused.retired) return { status: "revoked" as const, id: refused.retired.id, name: refused.retired.name };
        return { status: refused.reason };
      })();
      lookups.set(secret, answer);
    }
    return answer;
  };

  for await (const input of walk(operands.length ? operands : ["."], result.skipped)) {
    const kept: { found: Found; finding: Finding }[] = [];
    try {
      const scanned = await scanSource(input.handle ? fileReader(input) : stdinReader(), {
        skipBinary: !input.named,
        countLines: !input.seekable,
        onFound: async (found) => {
          const finding: Finding = { path: input.path, rawPath: input.rawPath, token: maskToken(found.secret), split: found.split, ...(await lookUp(found.secret)) };
          if (found.place) Object.assign(finding, found.place);
          result.counts[finding.status]++;
          if (finding.status === "live") {
            const seen = live.get(finding.id!);
            if (seen) seen.count++;
            else live.set(finding.id!, { first: finding, count: 1 });
          }
          if (++shown > MAX_FINDINGS) result.omitted++;
          else kept.push({ found, finding });
        },
      });
      if (scanned.binary) {
        result.skipped.binary++;
        continue;
      }
      result.files++;
      result.bytes += scanned.bytes;
      if (input.seekable && kept.length) {
        const byOffset = new Map(kept.map((k) => [k.found.offset, k.finding]));
        await locateAgain(fileReader(input), kept.map((k) => k.found.offset), (offset, at) => Object.assign(byOffset.get(offset)!, at));
      }
    } catch (error) {
      if (isServiceError(error)) throw error; // the store, not the file
      result.skipped.unreadable++;
      const code = (error as { code?: string })?.code ?? "error";
      if (result.skipped.unreadablePaths.length < 20) result.skipped.unreadablePaths.push(`${input.path} (${code})`);
    } finally {
      await input.handle?.close();
    }
    result.findings.push(...kept.map((k) => k.finding));
  }
  if (revoke && live.size) result.revoked = await revokeLive(live, result.findings, await store!);
  return result;
}

/** Deletes each live key found, once, with an audit event naming where it was found; marks its findings. */
async function revokeLive(live: Map<string, { first: Finding; count: number }>, findings: Finding[], store: ScanStore): Promise<number> {
  const gone = new Set<string>();
  for (const [id, { first, count }] of live) {
    const more = count > 1 ? ` and ${count - 1} more place${count > 2 ? "s" : ""}` : "";
    if (await store.deleteById(id, { reason: `leaked: found by apikey --scan at ${whereOf(first)}${more}` })) gone.add(id);
  }
  for (const f of findings) if (f.status === "live") f.revoked = gone.has(f.id!);
  return gone.size;
}

/** `apikey --scan` for the command: scan, revoke if asked, and the report as text or JSON. */
export async function runScan(operands: readonly string[], openStore: () => Promise<ScanStore>, options: { revoke: boolean; json: boolean }): Promise<Output> {
  return formatScan(await scan(operands, openStore, options.revoke), options.json);
}
