// Lays out a file store's audit trail as the store's rotation leaves it, for bench/audit-trail.mjs and the
// tests: rotated files of about `fileBytes` each, named by the time each was set aside, then the current
// log; one event a line in the store's own format, oldest first, `perMs` events a millisecond, the last
// one at `end`. Names are valid key names of `nameChars` characters, with letters of two UTF-8 bytes.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const pad = (n, width) => String(n).padStart(width, "0");
const rotatedName = (ms, i) => `audit-${new Date(ms).toISOString().replace(/[-:.]/g, "").replace("Z", "000Z")}-${pad(i.toString(16), 8)}.log`;

/** The name of the `i`th key: `nameChars` characters, letters, digits and spaces. */
export const trailName = (i, nameChars = 95) => `Zugangsschlüssel für Übertragung ${i} `.padEnd(nameChars, "ł");

/**
 * Writes `events` events into `<base>/audit` (made 0700 with the store's folder): `rotated` files set aside
 * once past `fileBytes`, the rest in `audit.log`. Returns the files written, oldest first, and their events.
 */
export function layTrail(base, { events, fileBytes = 4 * 1024 * 1024, perMs = 1, end = Date.now() - 60_000, nameChars = 95 }) {
  const dir = join(base, "audit");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const first = end - Math.floor((events - 1) / perMs);
  const files = [];
  let lines = [];
  let bytes = 0;
  let at = first;
  for (let i = 0; i < events; i++) {
    at = first + Math.floor(i / perMs);
    const line = JSON.stringify({
      at: new Date(at).toISOString(),
      action: i % 3 === 2 ? "delete" : "create",
      id: `00000000-0000-4000-8000-${pad(i, 12)}`,
      name: trailName(i, nameChars),
      actor: { kind: "key", id: "11111111-1111-4111-8111-111111111111", name: trailName(0, nameChars) },
    });
    lines.push(line);
    bytes += Buffer.byteLength(line) + 1;
    if (bytes > fileBytes && i < events - 1) {
      const name = rotatedName(at + 1, files.length);
      writeFileSync(join(dir, name), `${lines.join("\n")}\n`, { mode: 0o600 });
      files.push({ name, events: lines.length });
      lines = [];
      bytes = 0;
    }
  }
  writeFileSync(join(dir, "audit.log"), lines.length ? `${lines.join("\n")}\n` : "", { mode: 0o600 });
  files.push({ name: "audit.log", events: lines.length });
  return files;
}
