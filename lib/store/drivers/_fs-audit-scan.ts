/**
 * Finds the events of an audit log file read from its end back, a chunk at a time, newest first.
 *
 * Bytes, not text: a newline or an event start (`{"at":`) never falls inside a UTF-8 character, so lines
 * and pieces are cut on bytes and only a piece that is kept is decoded. A write cut short can leave a torn
 * line with the next event glued to it, so a line is split at event starts as well (a JSON string cannot
 * hold that text unescaped); whatever does not parse as a whole event is skipped. The time, written first,
 * is read without parsing the rest: an event the query would drop costs a `Date.parse`, not a `JSON.parse`.
 */
import type { AuditEvent } from "../../core/model.ts";
import { auditEventOf } from "../audit.ts";

/** Where an event starts: events are written with `at` first (see `auditEventOf`). */
const EVENT_OPEN = Buffer.from('{"at":"', "latin1");
const NEWLINE = 0x0a;
const BRACE = 0x7b;
/** Longer than any event the store writes: text past this without a line or event start is dropped, not held. */
export const MAX_PIECE = 1024 * 1024;

export interface ScanTarget {
  /** False when an event of this time would not be kept: its piece is not parsed. */
  wants(time: number): boolean;
  /** `at`: where the event starts in the file (bytes). */
  offer(event: AuditEvent, at: number): void;
}

/** The time an event piece starts with, or NaN. */
function timeOf(piece: Buffer): number {
  if (!piece.subarray(0, EVENT_OPEN.length).equals(EVENT_OPEN)) return NaN;
  const end = piece.indexOf(0x22, EVENT_OPEN.length);
  return end === -1 || end - EVENT_OPEN.length > 40 ? NaN : Date.parse(piece.toString("latin1", EVENT_OPEN.length, end));
}

/**
 * A scanner fed the chunks of one file from its end back: `push` each chunk (each one before the one pushed
 * last), then `end` at the start of the file, or at the start of the part read (`cut`: the first line there
 * may be partial, so it is kept only if it begins exactly at an event start). `latest` is the latest time
 * of the events seen since it was last reset, for a reader to judge when to stop.
 */
export function createBackwardScanner(target: ScanTarget) {
  /** The bytes after the last line start found: the end of a line whose beginning is not read yet. */
  let carry: Buffer = Buffer.alloc(0);
  /** The text at the end of `carry` lost its end (dropped as too long): its last piece is not whole. */
  let tornEnd = false;
  const state = { latest: -Infinity };
  /** The text the pieces are cut from and where it starts in the file. */
  let base: Buffer = carry;
  let baseAt = 0;
  let carryAt = 0;

  const take = (piece: Buffer) => {
    if (piece.length === 0 || piece[0] !== BRACE) return;
    const time = timeOf(piece);
    if (Number.isFinite(time)) {
      state.latest = Math.max(state.latest, time);
      if (!target.wants(time)) return;
    }
    try {
      const event = auditEventOf(JSON.parse(piece.toString("utf8")));
      if (!event) return;
      if (!Number.isFinite(time)) {
        const at = Date.parse(event.at); // written by hand with its fields in another order
        state.latest = Math.max(state.latest, at);
        if (!target.wants(at)) return;
      }
      target.offer(event, baseAt + piece.byteOffset - base.byteOffset);
    } catch {
      // a torn or foreign piece: not an event
    }
  };

  /** The pieces of `bytes` (a line, or its end from an event start) newest first. */
  const takePieces = (bytes: Buffer) => {
    let end = bytes.length;
    if (tornEnd) {
      end = Math.max(0, bytes.lastIndexOf(EVENT_OPEN, end - 1)); // the last piece ran into the dropped text
      tornEnd = false;
    }
    let start = end > 0 ? bytes.lastIndexOf(EVENT_OPEN, end - 1) : -1;
    for (; start > 0; start = bytes.lastIndexOf(EVENT_OPEN, end - 1)) {
      take(bytes.subarray(start, end));
      end = start;
    }
    take(bytes.subarray(0, end));
  };

  return {
    state,
    /** `at`: where `chunk` starts in the file. */
    push(chunk: Buffer, at = 0): void {
      const text = carry.length ? Buffer.concat([chunk, carry]) : chunk;
      (base = text), (baseAt = at);
      let end = text.length;
      for (let nl = text.lastIndexOf(NEWLINE, end - 1); nl !== -1; nl = end > 0 ? text.lastIndexOf(NEWLINE, end - 1) : -1) {
        takePieces(text.subarray(nl + 1, end));
        end = nl;
      }
      // No line start yet: the pieces that begin at an event start are whole; the text before them goes on.
      const rest = text.subarray(0, end);
      const first = rest.indexOf(EVENT_OPEN, 1);
      if (first !== -1) {
        takePieces(rest.subarray(first));
        carry = Buffer.from(rest.subarray(0, first));
      } else carry = Buffer.from(rest);
      carryAt = at;
      if (carry.length > MAX_PIECE) {
        carry = Buffer.alloc(0);
        tornEnd = true;
      }
    },
    end(cut: boolean): void {
      const rest = carry;
      carry = Buffer.alloc(0);
      (base = rest), (baseAt = carryAt);
      if (!cut || rest.subarray(0, EVENT_OPEN.length).equals(EVENT_OPEN)) takePieces(rest);
      tornEnd = false;
    },
  };
}
