import type { ChainSigner, ChainStatus } from '../chain.js';
import { ChainWalk, linkHolds, readerFor, unseal, type ChainFinding } from '../chain-check.js';
import { EVENT_PREFIX, FILE_PREFIX } from './format.js';
import { chainHeader, parseFileHeader, parseTraceFileName, startsWith, type ChainHeader } from './parse.js';

/** What a full read of one file's chain found. */
export interface FileChain {
  /** The version 3 header (null for version 2, or when the file has none). */
  header: ChainHeader | null;
  /** Each event line's status, by byte offset. */
  events: Map<number, ChainStatus>;
  /** Why an event line is `broken`, by byte offset: it concerns that event's run. */
  altered: Map<number, string>;
  /** About the file as a whole (a break, a bad header; or a note on how it is signed): concerns every run in it. */
  findings: ChainFinding[];
}

const MAX_BREAKS_REPORTED = 5;

/** An event line's `at`, for a finding a person can place; its offset when the line has none. */
function eventTime(line: Buffer, offset: number): string {
  return /"at":"([^"\\]{1,64})"/.exec(line.toString('latin1', 0, Math.min(line.length, 512)))?.[1] ?? `byte ${offset}`;
}

/**
 * Checks one file's chain, line by line in file order (only complete lines: a torn last line
 * is never seen). The header must match the file's name and hold its own link; every
 * event line must hold its link and continue from the line before it.
 */
export class FileChainScan {
  private header: FileChain['header'] = null;
  private unchained = false;
  private walk: ChainWalk | null = null;
  private seenFirst = false;
  private breaks = 0;
  private readonly events = new Map<number, ChainStatus>();
  private readonly altered = new Map<number, string>();
  private readonly findings: ChainFinding[] = [];

  constructor(
    private readonly name: string,
    private readonly signer: ChainSigner,
  ) {}

  private broken(text: string): void {
    this.findings.push({ broken: true, text: `${this.name}: ${text}` });
  }

  /** Feeds the next complete line (newline excluded) and its byte offset. */
  line(line: Buffer, offset: number): void {
    const first = !this.seenFirst;
    this.seenFirst = true;
    if (first && startsWith(line, FILE_PREFIX)) {
      this.readHeader(line);
      return;
    }
    if (first) this.broken('it has no file header: its start was removed or altered');
    if (!startsWith(line, EVENT_PREFIX)) return;
    if (this.unchained) {
      this.events.set(offset, 'unchained');
      return;
    }
    if (!this.walk) {
      this.events.set(offset, 'broken');
      this.altered.set(offset, `${this.name}: the event at ${eventTime(line, offset)} cannot be checked: the file's header is missing or unreadable`);
      return;
    }
    const before = this.walk.breaks.length;
    const sealed = unseal(line);
    const status = this.walk.next(sealed);
    this.events.set(offset, status);
    if (status === 'broken') {
      const what = sealed ? 'was altered or forged: its link does not hold' : 'carries no link: it was inserted';
      this.altered.set(offset, `${this.name}: the event at ${eventTime(line, offset)} ${what}`);
    }
    if (this.walk.breaks.length > before && this.breaks++ < MAX_BREAKS_REPORTED) {
      this.broken(`the chain breaks before the event at ${eventTime(line, offset)}: an event was removed, inserted or reordered there`);
    }
  }

  private readHeader(line: Buffer): void {
    const header = parseFileHeader(line);
    if (header && header.v < 3) {
      this.unchained = true;
      this.findings.push({ broken: false, text: `${this.name} predates chaining (format ${header.v}): nothing in it can be checked beyond its digests` });
      return;
    }
    const sealed = unseal(line);
    const chained = chainHeader(header);
    const named = parseTraceFileName(this.name);
    if (!chained || !sealed) {
      this.broken('its header is unreadable');
      return;
    }
    const reader = readerFor(this.signer, chained.mac, chained.key);
    if (reader.status === 'unverifiable') {
      const why = this.signer.keyId === null ? 'no TRACE_SIGNING_KEY is configured here' : 'TRACE_SIGNING_KEY is another key';
      this.findings.push({ broken: false, text: `${this.name} is signed with key ${chained.key ?? '?'}, and ${why}: its links cannot be checked` });
    } else if (reader.status === 'linked' && this.signer.keyId !== null) {
      this.findings.push({ broken: false, text: `${this.name} was written without a signing key: anyone who can write TRACE_DIR could have written it` });
    }
    if (reader.check && !linkHolds(reader.check, sealed)) this.broken('its header was altered');
    if (!named || named.writerId !== chained.writer || named.sequence !== chained.seq || new Date(named.createdMs).toISOString() !== chained.created) {
      this.broken('its header does not match its name: it was copied or renamed');
    }
    this.header = { ...chained, p: sealed.previous, c: sealed.link };
    this.walk = new ChainWalk(sealed.link, reader);
  }

  result(): FileChain {
    if (this.breaks > MAX_BREAKS_REPORTED) this.broken(`and ${this.breaks - MAX_BREAKS_REPORTED} more breaks`);
    return { header: this.header, events: this.events, altered: this.altered, findings: this.findings };
  }
}
