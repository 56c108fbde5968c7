import { timingSafeEqual } from 'node:crypto';
import { createChainSigner, SEAL_BYTES, type ChainMac, type ChainSigner, type ChainStatus, type Predecessor } from './chain.js';

/**
 * Checking a chain (chain.ts makes it): a record's seal and link, a hand-over between a
 * writer's segments, a segment's records in order, and a run's verdict. Pure, as chain.ts.
 */

const SEVERITY: Record<ChainStatus, number> = { signed: 0, linked: 1, unchained: 2, unverifiable: 3, broken: 4 };

/** The worse of two statuses (`broken` worst, `signed` best). */
export function worse(a: ChainStatus, b: ChainStatus): ChainStatus {
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}


/**
 * How a reader holding `signer` checks records written with `mac` (and `keyId`): the
 * status an intact link earns, and the signer to recompute it with (null when it cannot).
 */
export function readerFor(signer: ChainSigner, mac: ChainMac, keyId: string | null): { status: ChainStatus; check: ChainSigner | null } {
  if (mac === 'sha256') return { status: 'linked', check: signer.mac === 'sha256' ? signer : createChainSigner() };
  if (signer.mac === 'hmac-sha256' && keyId === signer.keyId) return { status: 'signed', check: signer };
  return { status: 'unverifiable', check: null };
}

const HEX64 = /^[0-9a-f]{64}$/;

export interface Sealed {
  /** The bytes the link covers: everything before the seal. */
  body: Buffer;
  previous: string;
  link: string;
}

/** Splits a chained record (without its newline) into body and seal; null when it carries no seal. */
export function unseal(line: Buffer): Sealed | null {
  if (line.length <= SEAL_BYTES) return null;
  const at = line.length - SEAL_BYTES;
  if (line.toString('latin1', at, at + 6) !== ',"p":"' || line.toString('latin1', at + 70, at + 77) !== '","c":"' || line.toString('latin1', at + 141) !== '"}') {
    return null;
  }
  const previous = line.toString('latin1', at + 6, at + 70);
  const link = line.toString('latin1', at + 77, at + 141);
  return HEX64.test(previous) && HEX64.test(link) ? { body: line.subarray(0, at), previous, link } : null;
}

/** Whether `sealed.link` is the link `check` computes for its body; constant-time in the comparison. */
export function linkHolds(check: ChainSigner, sealed: Sealed): boolean {
  const expected = Buffer.from(check.link(sealed.previous, sealed.body), 'latin1');
  return timingSafeEqual(expected, Buffer.from(sealed.link, 'latin1'));
}

/** What a reader finds of a predecessor now. */
export type PredecessorState =
  | { exists: false }
  | {
      exists: true;
      bytes: number;
      /** The complete record at `claim.last` (newline excluded), or null when the file no longer reaches it. */
      lastRecord: Buffer | null;
    };

/** Something the chain shows; a `broken` one makes the runs it concerns `broken`, the others are notes. */
export interface ChainFinding {
  broken: boolean;
  text: string;
}

export interface Succession {
  /** About the hand-over itself; concerns the runs of both files. */
  finding: ChainFinding | null;
  /** Records of the predecessor at or after `from` were written after the hand-over: not vouched for. */
  unvouched: { from: number; text: string } | null;
}

/** How far apart replica clocks may be when deciding whether retention explains a missing file. */
export const RETENTION_GRACE_MS = 60_000;

/**
 * Checks a hand-over: `claim` (the next segment's record of its predecessor) and
 * `previous` (the link the next segment continues from) against what is found of the
 * predecessor now. A predecessor past retention may be gone; one the writer found
 * disturbed is reported as it found it, not as tampering — anything else that differs is.
 */
export function checkSuccession(claim: Predecessor, previous: string, found: PredecessorState, nowMs: number, retentionMs: number): Succession {
  const name = claim.file;
  if (!found.exists) {
    if (claim.found) {
      const what = claim.found.bytes === null ? 'replaced or removed' : `cut from ${claim.bytes} to ${claim.found.bytes} bytes`;
      return { finding: { broken: false, text: `${name} was ${what} under its writer, which noticed, warned and moved on; it is gone now` }, unvouched: null };
    }
    if (Date.parse(claim.newest) < nowMs - retentionMs + RETENTION_GRACE_MS) return { finding: null, unvouched: null };
    return { finding: { broken: true, text: `${name} is missing: it held ${claim.events} events up to ${claim.newest}, within retention` }, unvouched: null };
  }
  if (found.bytes < claim.bytes) {
    if (claim.found && claim.found.bytes === found.bytes) {
      return {
        finding: { broken: false, text: `${name} was cut from ${claim.bytes} to ${found.bytes} bytes under its writer, which noticed, warned and moved on; the events cut are lost` },
        unvouched: null,
      };
    }
    return { finding: { broken: true, text: `${name} was cut from ${claim.bytes} to ${found.bytes} bytes after its writer moved on: its last events were removed` }, unvouched: null };
  }
  const last = found.lastRecord ? unseal(found.lastRecord) : null;
  if (!last || last.link !== previous) {
    return { finding: { broken: true, text: `${name} does not end with the record its writer's next file continues from: its last event was altered or replaced` }, unvouched: null };
  }
  if (found.bytes > claim.bytes) {
    return {
      finding: null,
      unvouched: { from: claim.bytes, text: `${name} holds events after the end its writer vouched for when it moved on: a batch that failed (answered 503), or lines added later` },
    };
  }
  return { finding: null, unvouched: null };
}

/**
 * Follows one segment's chain record by record (in order): each record's own link, and
 * whether it continues from the record before it. Breaks are reported once each.
 */
export class ChainWalk {
  /** The last record's link: what the next record must continue from. */
  last: string;
  readonly breaks: number[] = [];
  private index = 0;

  constructor(
    first: string,
    private readonly reader: { status: ChainStatus; check: ChainSigner | null },
  ) {
    this.last = first;
  }

  /** The status of the next record (`broken` when it carries no seal or its link fails); records a break when it does not continue the chain. */
  next(sealed: Sealed | null): ChainStatus {
    const at = this.index++;
    if (!sealed) {
      this.breaks.push(at);
      return 'broken';
    }
    if (sealed.previous !== this.last) this.breaks.push(at);
    this.last = sealed.link;
    if (!this.reader.check) return this.reader.status;
    return linkHolds(this.reader.check, sealed) ? this.reader.status : 'broken';
  }
}

/** A run's verdict: the worst status of its events, `broken` when any finding is. */
export interface RunChain {
  status: ChainStatus;
  /** What breaks the chain (tampering, or a loss nobody accounted for). */
  problems: string[];
  /** What is worth knowing but accounted for (a file the writer found cut and said so). */
  notes: string[];
}

const MAX_FINDINGS = 20;

/**
 * Folds event statuses and findings into a run's verdict; findings deduplicated, at most 20
 * of each kind. A page with no events vouches for nothing: it reads as what an intact link
 * earns under `signer` (`signed` only with a key, `linked` without), never more.
 */
export function summarizeRun(statuses: Iterable<ChainStatus>, findings: Iterable<ChainFinding>, signer: Pick<ChainSigner, 'keyId'>): RunChain {
  let status: ChainStatus = signer.keyId !== null ? 'signed' : 'linked';
  let any = false;
  for (const each of statuses) {
    status = any ? worse(status, each) : each;
    any = true;
  }
  const problems = new Set<string>();
  const notes = new Set<string>();
  for (const finding of findings) (finding.broken ? problems : notes).add(finding.text);
  if (problems.size > 0) status = 'broken';
  const cap = (set: Set<string>) => {
    const list = [...set];
    return list.length > MAX_FINDINGS ? [...list.slice(0, MAX_FINDINGS), `and ${list.length - MAX_FINDINGS} more`] : list;
  };
  return { status, problems: cap(problems), notes: cap(notes) };
}
