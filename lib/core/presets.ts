/**
 * Presets: named permission sets for common jobs, so that a key for a Docker dashboard is
 * `--preset docker_manager` rather than four `RESOURCE:ACTION` pairs typed by hand. The five names are
 * those of Unraid's presets; the pairs are this service's own, chosen to match each name, and are exact:
 * a preset grants what its list says and nothing more (docs/cli.md, "Presets"). A preset combines with
 * roles and permissions: the key holds their union.
 */
import { groupPermissions, type Permission, type Role } from "./model.ts";
import { ServiceError } from "./errors.ts";
import { didYouMean } from "./suggest.ts";
import { redactSecrets } from "./secret.ts";

/** A named set of roles and permissions. */
export interface Preset {
  name: string;
  description: string;
  roles: Role[];
  permissions: Permission[];
}

const crud = (resource: string) => ["CREATE_ANY", "READ_ANY", "UPDATE_ANY", "DELETE_ANY"].map((a) => `${resource}:${a}`);
const read = (...resources: string[]) => resources.map((r) => `${r}:READ_ANY`);

const preset = (name: string, description: string, pairs: string[]): Preset => ({
  name,
  description,
  roles: [],
  permissions: groupPermissions(pairs),
});

/** Every preset, in the order help and the console show them. */
export const PRESETS: readonly Preset[] = [
  preset("docker_manager", "Manage Docker containers: create, read, update and delete", crud("DOCKER")),
  preset("vm_manager", "Manage virtual machines: create, read, update and delete", crud("VMS")),
  preset(
    "monitoring",
    "Read-only view of the system's health: info, dashboard, logs, array, disks, containers, VMs, network, notifications and services",
    read("ARRAY", "DASHBOARD", "DISK", "DOCKER", "INFO", "LOGS", "NETWORK", "NOTIFICATIONS", "ONLINE", "SERVICES", "VMS"),
  ),
  preset(
    "backup_manager",
    "Run backups: read and write the flash drive and shares, read the array, disks and configuration",
    [...read("ARRAY", "CONFIG", "DISK"), "FLASH:CREATE_ANY", "FLASH:READ_ANY", "FLASH:UPDATE_ANY", "SHARE:READ_ANY", "SHARE:UPDATE_ANY"],
  ),
  preset(
    "network_admin",
    "Manage the network and remote access: network settings, services and connect",
    [...crud("NETWORK"), "SERVICES:READ_ANY", "SERVICES:UPDATE_ANY", "CONNECT:READ_ANY", "CONNECT:UPDATE_ANY", "CONNECT__REMOTE_ACCESS:READ_ANY", "CONNECT__REMOTE_ACCESS:UPDATE_ANY"],
  ),
];

export const PRESET_NAMES: readonly string[] = PRESETS.map((p) => p.name);

/**
 * The presets a `--preset` value names: comma-separated, case-insensitive, `-` read as `_`. An unknown
 * name is INVALID_INPUT naming the valid ones, with a did-you-mean for a typo.
 * @example parsePresets("docker_manager")[0].permissions // [{ resource: "DOCKER", actions: [...4 actions] }]
 */
export function parsePresets(value: unknown): Preset[] {
  const items = (Array.isArray(value) ? value : [value]).flatMap((v) => (typeof v === "string" ? v.split(",") : [v]));
  const found: Preset[] = [];
  for (const item of items) {
    if (typeof item !== "string") throw new ServiceError("INVALID_INPUT", "A preset is a name, e.g. docker_manager");
    const name = item.trim().toLowerCase().replaceAll("-", "_");
    if (!name) continue;
    const match = PRESETS.find((p) => p.name === name);
    if (!match) {
      const shown = JSON.stringify([...redactSecrets(item.trim())].slice(0, 40).join("")).replace(/[\p{C}]/gu, "?");
      const guess = name.length <= 40 ? didYouMean(name, PRESET_NAMES) : "";
      throw new ServiceError("INVALID_INPUT", `Unknown preset ${shown}.${guess} Valid presets: ${PRESET_NAMES.join(", ")}`);
    }
    if (!found.includes(match)) found.push(match);
  }
  if (found.length === 0) throw new ServiceError("INVALID_INPUT", `--preset needs a name: ${PRESET_NAMES.join(", ")}`);
  return found;
}

/** The `RESOURCE:ACTION` pairs and roles of these presets together. */
export function presetGrants(presets: readonly Preset[]): { roles: Role[]; pairs: string[] } {
  return {
    roles: presets.flatMap((p) => p.roles),
    pairs: presets.flatMap((p) => p.permissions.flatMap((q) => q.actions.map((a) => `${q.resource}:${a}`))),
  };
}
