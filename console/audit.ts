// The audit trail: who changed which key, oldest first as `--audit` prints it, over a chosen time span;
// older events are paged in above with `before`.
import { ApiError, gql } from "./api.ts";
import { field, h, message, replace, when } from "./dom.ts";

interface AuditEvent {
  at: string;
  action: string;
  id: string;
  name: string;
  actor: { kind: string; user: string | null; host: string | null; name: string | null };
  changed: string[] | null;
}

const SPANS: [string, string][] = [["1h", "Last hour"], ["24h", "Last 24 hours"], ["7d", "Last 7 days"], ["30d", "Last 30 days"], ["", "Everything kept"]];
const PAGE = 100;
const QUERY = `query($since: String, $before: String, $limit: Int) {
  auditLog(since: $since, before: $before, limit: $limit) { at action id name actor { kind user host name } changed }
}`;

const actorText = (a: AuditEvent["actor"]) => (a.kind === "key" ? `key ${a.name ?? "?"}` : `${a.user ?? "?"}@${a.host ?? "?"}`);

/** The audit screen; `load()` reads the latest page for the chosen span. */
export function auditScreen(): { element: HTMLElement; load(): Promise<void> } {
  const since = h("select", {}, ...SPANS.map(([value, label]) => h("option", { value, selected: value === "24h" }, label)));
  const body = h("tbody");
  const status = h("div");
  const older = h("button", { type: "button", class: "secondary", hidden: true }, "Load older events");
  let oldest: string | undefined;

  const fetchPage = async (before?: string) => {
    replace(status, message("status", "Loading…"));
    try {
      const { auditLog } = await gql<{ auditLog: AuditEvent[] }>(QUERY, { since: since.value || null, before: before ?? null, limit: PAGE });
      if (!before) replace(body);
      // A page comes oldest first; an older page goes above the rows already shown.
      const first = body.firstChild;
      for (const event of auditLog) body.insertBefore(eventRow(event), first);
      oldest = auditLog[0]?.at;
      older.hidden = auditLog.length < PAGE;
      replace(status, message("status", body.childElementCount ? `${body.childElementCount} events shown, oldest first (times in UTC)` : "No changes in this span."));
    } catch (error) {
      replace(status, message("error", (error as ApiError).message));
    }
  };
  since.addEventListener("change", () => fetchPage());
  older.addEventListener("click", () => oldest && fetchPage(oldest));
  const element = h("section", { class: "audit-screen", "aria-label": "Audit trail" },
    h("h2", {}, "Audit trail"),
    field("Show changes from", since),
    status,
    older,
    h("div", { class: "table-wrap" }, h("table", { class: "audit" },
      h("caption", { class: "visually-hidden" }, "Audit events"),
      h("thead", {}, h("tr", {}, ...["When (UTC)", "Action", "Key", "By", "Changed"].map((label) => h("th", { scope: "col" }, label)))),
      body)),
  );
  return { element, load: () => fetchPage() };
}

function eventRow(event: AuditEvent): HTMLTableRowElement {
  return h("tr", {},
    h("td", { "data-label": "When" }, h("time", { datetime: event.at }, when(event.at))),
    h("td", { "data-label": "Action" }, event.action),
    h("td", { "data-label": "Key" }, event.name),
    h("td", { "data-label": "By" }, actorText(event.actor)),
    h("td", { "data-label": "Changed" }, event.changed?.join(", ") ?? ""));
}
