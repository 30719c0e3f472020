/**
 * The remote backend's `audit`: the service's `auditTrail`, read page by page from the newest back in the
 * order the trail was written, and selected as a local read selects (`createEventSelector`), so that the
 * same query lists what it lists locally. Paging by position, not by time, finds every event once, also
 * where times step back (a clock step, writers on hosts a little apart). The pages read are bounded, and
 * each must move the cursor, so a service that answers otherwise cannot keep the listing going for ever.
 */
import type { AuditEvent } from "../core/model.ts";
import { type AuditQuery, createEventSelector } from "../store/audit-select.ts";
import { ServiceError } from "../core/errors.ts";
import type { Client } from "./client.ts";
import { AuditTrailSchema, EVENT_FIELDS, toEvent } from "./_remote-shapes.ts";

/** Events asked for in one `auditTrail` answer: about 250 KB of JSON, and 1.2 MB at most, well under the client's 4 MiB. */
const AUDIT_PAGE = 1_000;
/** Pages read at most: far past any trail the service keeps (a 20 MiB log, 100,000 Redis entries). */
const AUDIT_PAGES = 1_000;

/** The error for `auditTrail` pages that would never end. */
const wrongPages = (what: string) => new ServiceError("INTERNAL", `The service's audit trail came back with ${what}; stopped reading`);

const TRAIL = `query ($since: String, $before: String, $limit: Int, $cursor: String) {
  auditTrail(since: $since, before: $before, limit: $limit, cursor: $cursor) { events { ${EVENT_FIELDS} } cursor } }`;

/** The `audit` method of a remote backend on `client`. */
export function remoteAudit(client: Client) {
  return {
    /** The service's trail, page by page from the newest back: what the same query lists locally. */
    async audit(query: AuditQuery = {}): Promise<AuditEvent[]> {
      const selector = createEventSelector(query);
      if (selector.done(Infinity)) return []; // limit 0
      const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
      const filters = { since: iso(query.since), before: iso(query.before), limit: AUDIT_PAGE };
      let cursor: string | undefined;
      for (let pages = 1; ; pages++) {
        if (pages > AUDIT_PAGES) throw wrongPages(`over ${AUDIT_PAGES * AUDIT_PAGE} events; narrow the listing with --since or --limit`);
        const { auditTrail: page } = await client.request(TRAIL, { ...filters, cursor }, AuditTrailSchema);
        if (page.events.length > AUDIT_PAGE) throw wrongPages("a page longer than asked");
        let latest = -Infinity;
        for (let i = page.events.length - 1; i >= 0; i--) {
          const event = toEvent(page.events[i]);
          latest = Math.max(latest, Date.parse(event.at));
          selector.offer(event);
        }
        if (page.cursor === null || (latest !== -Infinity && selector.done(latest))) break;
        if (page.cursor === cursor || page.events.length === 0) throw wrongPages("a page that does not move back through the trail");
        cursor = page.cursor;
      }
      return selector.result();
    },
  };
}
