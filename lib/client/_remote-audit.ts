/**
 * The remote backend's `audit`: the service's `auditLog`, read page by page from the newest back, so
 * that the same query lists what it lists locally. Each page must go further back in time, and the
 * pages read are bounded, so a service that answers otherwise cannot keep the listing going for ever.
 */
import type { AuditEvent } from "../core/model.ts";
import type { AuditQuery } from "../store/audit.ts";
import { ServiceError } from "../core/errors.ts";
import type { Client } from "./client.ts";
import { AuditSchema, EVENT_FIELDS, toEvent } from "./_remote-shapes.ts";

/** Events asked for in one `auditLog` answer: about 250 KB of JSON, and 1.2 MB at most, well under the client's 4 MiB. */
const AUDIT_PAGE = 1_000;
/** Pages read at most: far past any trail the service keeps (a 20 MiB log, 100,000 Redis entries). */
const AUDIT_PAGES = 1_000;

/** The error for `auditLog` pages that would never end. */
const wrongPages = (what: string) => new ServiceError("INTERNAL", `The service's audit trail came back with ${what}; stopped reading`);

/** The `audit` method of a remote backend on `client`. */
export function remoteAudit(client: Client) {
  return {
    /** The service's trail, page by page from the newest back: what the same query lists locally. */
    async audit(query: AuditQuery = {}): Promise<AuditEvent[]> {
      const wanted = query.limit ?? Infinity;
      const since = query.since === undefined ? undefined : new Date(query.since).toISOString();
      const events: AuditEvent[] = [];
      let pages = 0;
      /** How many of the events received share the oldest time, the first `n` of `events`. */
      const oldestShared = () => {
        let n = 0;
        while (n < events.length && Date.parse(events[n].at) === Date.parse(events[0].at)) n++;
        return n;
      };
      for (let before: number | undefined; events.length < wanted;) {
        // After the first page, `before` is just after the oldest time received, so that none of that time is
        // missed: the page then ends with the `have` events of that time received already.
        const have = before === Date.parse(events[0]?.at) + 1 ? oldestShared() : 0;
        const limit = Math.min(AUDIT_PAGE, wanted - events.length + have);
        const data = await client.request(
          `query ($since: String, $before: String, $limit: Int) { auditLog(since: $since, before: $before, limit: $limit) { ${EVENT_FIELDS} } }`,
          { since, before: before === undefined ? undefined : new Date(before).toISOString(), limit },
          AuditSchema,
        );
        const page = data.auditLog.map(toEvent);
        // Each page goes further back, so the listing ends: a service that answers otherwise is refused.
        if (before !== undefined && page.some((e) => !(Date.parse(e.at) < before!))) throw wrongPages("an event not before the time asked");
        if (++pages > AUDIT_PAGES) throw wrongPages(`over ${AUDIT_PAGES * AUDIT_PAGE} events; narrow the listing with --since or --limit`);
        let fresh = page.length;
        for (let n = 0; n < have && fresh > 0 && Date.parse(page[fresh - 1].at) === Date.parse(events[0].at); n++) fresh--;
        events.unshift(...page.slice(0, fresh));
        if (page.length < limit || fresh === 0 || events.length >= wanted) break;
        // A whole page of one millisecond could never move on: then go on strictly before it.
        const oldest = Date.parse(events[0].at);
        const next = oldestShared() < AUDIT_PAGE ? oldest + 1 : oldest;
        if (before !== undefined && next >= before) throw wrongPages("pages that do not go back in time");
        before = next;
      }
      return events.slice(Math.max(0, events.length - wanted));
    },
  };
}
