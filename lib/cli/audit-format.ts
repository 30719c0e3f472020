/**
 * `apikey --audit` as text or JSON: the store's events, oldest first. On a terminal an aligned table
 * fitted to its width, on a pipe one tab-separated line per event (docs/lifecycle.md, "Reading the audit trail"),
 * in JSON `{"events":[{"at","action","id","name","actor"}]}` with `changed` / `replaced` when present.
 */
import type { AuditEvent } from "../core/model.ts";
import { describeActor } from "../store/audit.ts";
import type { Output } from "./format-results.ts";
import { jsonLine } from "./json-text.ts";
import type { ListView } from "./list.ts";
import { type Column, renderLines, renderTable } from "./table.ts";

/** "2026-11-22T21:08:09.123Z" -> "2026-11-22 21:08:09" (UTC): events a second apart stay apart. */
const eventTime = (iso: string) => iso.replace("T", " ").slice(0, 19);

/** What else an event says, for the table: the fields an update changed, or (the start of) the id an overwrite replaced. */
const detail = (event: AuditEvent) =>
  event.changed?.length ? event.changed.join(",") : event.replaced ? `replaced ${event.replaced.slice(0, 8)}` : event.reason ?? "";

/** The actor in the table: `alice@build-7`, or `key 'deploy'` (the pipe and --json also give that key's id). */
const actorCell = (event: AuditEvent) => (event.actor.kind === "key" ? `key '${event.actor.name}'` : describeActor(event.actor));

/**
 * Which key of one name an event is about, when an overwrite replaced one with another: " (old)" for the
 * replaced key's events, " (new)" for its replacement's (a key both replaced and replacing is old).
 */
function twinMarks(events: readonly AuditEvent[]): Map<string, string> {
  const marks = new Map<string, string>();
  for (const e of events) if (e.replaced && !marks.has(e.id)) marks.set(e.id, " (new)");
  for (const e of events) if (e.replaced) marks.set(e.replaced, " (old)");
  return marks;
}

/** The table's columns; the name is cut last (see `listColumns`), `events` mark a key and its twin. */
const columns = (events: readonly AuditEvent[]): Column<AuditEvent>[] => {
  const marks = twinMarks(events);
  return [
    { header: "TIME (UTC)", cell: (e) => eventTime(e.at) },
    { header: "ACTION", cell: (e) => e.action },
    { header: "NAME", cell: (e) => e.name, suffix: (e) => marks.get(e.id) ?? "", min: 6, soft: 12, keep: true },
    { header: "ID", cell: (e) => e.id, min: 8, last: true },
    { header: "ACTOR", cell: actorCell, min: 8, soft: 16 },
    { header: "DETAIL", cell: detail, min: 4, soft: 12, first: true },
  ];
};

/** The pipe format's fields, in their documented order. */
const FIELDS: readonly ((e: AuditEvent) => string)[] = [
  (e) => e.at,
  (e) => e.action,
  (e) => e.id,
  (e) => e.name,
  (e) => describeActor(e.actor),
  (e) => e.changed?.join(",") ?? "",
  (e) => e.replaced ?? "",
  (e) => e.reason ?? "",
];

/** The events as the store gives them, in the specified JSON shape (field order fixed, extras only when present). */
function eventJson(e: AuditEvent) {
  return {
    at: e.at,
    action: e.action,
    id: e.id,
    name: e.name,
    actor: e.actor,
    ...(e.changed ? { changed: e.changed } : {}),
    ...(e.replaced ? { replaced: e.replaced } : {}),
    ...(e.reason ? { reason: e.reason } : {}),
  };
}

/** `--audit`: JSON, the table on a terminal, or lines on a pipe; no events: a line on stderr, exit 0. */
export function formatAudit(events: AuditEvent[], asJson: boolean, view: ListView): Output {
  if (asJson) return { stdout: jsonLine({ events: events.map(eventJson) }), exitCode: 0, readerMayLeave: true };
  if (events.length === 0) return { notice: "No audit events", exitCode: 0 };
  return { stdout: view.tty ? renderTable(columns(events), events, view.columns) : renderLines(FIELDS, events), exitCode: 0, readerMayLeave: true };
}
