/**
 * The report of `apikey --scan`. Text: one line per secret found on stdout,
 * `path:line:column: sapi_Gj…1Ga live key 'deploy' (id 3f2c…), revoked`, and a summary on stderr.
 * JSON: one object, `{"live","expired","unknown","revoked","findings":[…],"omitted","scanned","skipped"}`.
 * Paths are printable (./scan-text.ts); names are store text, escaped the same way.
 */
import type { Output } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";
import { printable } from "./scan-text.ts";
import type { Skipped } from "./scan-walk.ts";

/** "revoked": the secret of a key deleted or replaced, which the store still recognises (its retired secrets). */
export type Status = "live" | "disabled" | "expired" | "revoked" | "unknown";

export interface Finding {
  path: string;
  rawPath: string;
  line?: number;
  column?: number;
  /** The secret masked: `sapi_Gj…1Ga`. */
  token: string;
  /** Read across line breaks or invisible characters. */
  split: boolean;
  status: Status;
  id?: string;
  name?: string;
  revoked?: boolean;
}

export interface ScanResult {
  findings: Finding[];
  /** Findings left out of `findings` past MAX_FINDINGS (still counted, and their keys still revoked). */
  omitted: number;
  counts: Record<Status, number>;
  files: number;
  bytes: number;
  skipped: Skipped;
  revoked: number;
}


/** Where a finding is, as the report and the audit trail write it: `path:line:column`. */
export const whereOf = (f: Finding): string => `${f.path}:${f.line ?? "?"}:${f.column ?? "?"}`;

function statusText(f: Finding): string {
  const key = f.id ? ` key '${printable(f.name ?? "")}' (id ${f.id})` : "";
  const revoked = f.revoked === true ? ", revoked" : f.revoked === false ? ", already deleted" : "";
  return `${f.status}${key}${revoked}${f.split ? " (split across lines or by invisible characters)" : ""}`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The summary for people: what was read, what was skipped, what was found and done. */
function summary(r: ScanResult): string {
  const mb = (r.bytes / 1e6).toFixed(r.bytes < 1e7 ? 2 : 0);
  const s = r.skipped;
  const skipped = [
    s.git && plural(s.git, ".git folder"),
    s.binary && plural(s.binary, "binary file"),
    s.large && plural(s.large, "file over 50 MB", "files over 50 MB"),
    s.links && plural(s.links, "link"),
    s.special && plural(s.special, "FIFO, socket or device", "FIFOs, sockets or devices"),
    s.pseudo && plural(s.pseudo, "pseudo file system (/proc, /sys)", "pseudo file systems (/proc, /sys)"),
    s.unreadable && plural(s.unreadable, "unreadable path"),
  ].filter(Boolean);
  const total = r.counts.live + r.counts.disabled + r.counts.expired + r.counts.revoked + r.counts.unknown;
  const lines = [
    `Scanned ${plural(r.files, "input")} (${mb} MB)${skipped.length ? `; skipped ${skipped.join(", ")}` : ""}.`,
    total
      ? `Found ${plural(total, "secret")}: ${r.counts.live} live, ${r.counts.disabled ? `${r.counts.disabled} disabled, ` : ""}${r.counts.expired} expired, ${r.counts.revoked ? `${r.counts.revoked} already revoked, ` : ""}${r.counts.unknown} unknown.` +
        (r.omitted ? ` ${r.omitted} not listed one by one.` : "")
      : "No secrets found.",
  ];
  if (r.revoked) lines.push(`Revoked ${plural(r.revoked, "key")}; the audit trail says where each was found.`);
  if (r.counts.live && !r.revoked) lines.push("A live key was found: revoke it (--scan --revoke, or --delete --id <id>) and create a new one.");
  for (const path of s.unreadablePaths) lines.push(`Could not read ${path}`);
  return lines.join("\n");
}

/** `--scan`'s output; exit 1 when a live key was found, 0 otherwise. */
export function formatScan(r: ScanResult, asJson: boolean): Output {
  const exitCode = r.counts.live ? 1 : 0;
  if (asJson) {
    const { unreadablePaths, ...skipped } = r.skipped;
    const findings = r.findings.map((f) => ({
      path: f.rawPath,
      line: f.line ?? null,
      column: f.column ?? null,
      token: f.token,
      status: f.status,
      ...(f.id ? { id: f.id, name: f.name } : {}),
      ...(f.revoked !== undefined ? { revoked: f.revoked } : {}),
      ...(f.split ? { split: true } : {}),
    }));
    // `revoked` counts the keys this run revoked; secrets of keys revoked before are `alreadyRevoked`.
    const { revoked: alreadyRevoked, ...counts } = r.counts;
    const body = { ...counts, alreadyRevoked, revoked: r.revoked, findings, omitted: r.omitted, scanned: { inputs: r.files, bytes: r.bytes }, skipped, unreadable: unreadablePaths };
    return { stdout: jsonLine(body), exitCode, readerMayLeave: true };
  }
  const stdout = r.findings.map((f) => `${whereOf(f)}: ${f.token} ${statusText(f)}\n`).join("");
  return { ...(stdout ? { stdout } : {}), notice: summary(r), exitCode, readerMayLeave: true };
}
