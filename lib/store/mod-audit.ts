/**
 * `service-api-keys/audit`: the audit trail every change to a store appends to. `store.audit()` reads it;
 * this is for keeping it elsewhere (`KeyStoreOptions.audit` takes any `AuditLog`) and for showing its events.
 *
 * @example
 * import { createKeyStore } from "service-api-keys";
 * import { createMemoryAuditLog, describeActor } from "service-api-keys/audit";
 * const store = createKeyStore({ audit: createMemoryAuditLog(1_000) });
 * await store.create({ name: "ci", roles: ["ADMIN"], permissions: [] });
 * const [event] = await store.audit();
 * console.log(event.action, describeActor(event.actor)); // "create", and who: alice@ci-7 (the local user and host)
 */
export { AUDIT_ACTIONS, type AuditAction, type AuditEvent } from "../core/model.ts";
export { type AuditLog, type AuditPage, type AuditPageQuery, type AuditQuery, createMemoryAuditLog, describeActor, localActor } from "./audit.ts";
