import type { ChainMac } from '../chain.js';

/**
 * How the PostgreSQL backend chains its rows (docs/traces.md, "PostgreSQL"): each process
 * writes one chain *segment* at a time, as the files backend writes one file at a time. A
 * segment row holds its header — who wrote it, how it is chained, and where the writer's
 * previous segment ended — chained from that previous segment's last link (64 zeros for a
 * writer's first), and every event row of the segment continues the chain: its `prev` is
 * the link of the row before it, its `link` a MAC over `prev` and every byte of its `body`.
 * The body names its segment, its place in it and when the event before it happened, so a
 * row copied, moved or renumbered does not verify, and a gap is told apart from retention.
 */
const SEGMENT_FORMAT_VERSION = 1;

/** Where the writer's previous segment ended, as the next one's header vouches for it. */
export interface SegmentClaim {
  segment: string;
  /** The last event acknowledged in it (0: none). */
  seq: number;
  events: number;
  /** Its newest event (its creation while it holds none): when retention may delete it. */
  newest: string;
}

export interface SegmentHeader {
  writer: string;
  seq: number;
  createdMs: number;
  mac: ChainMac;
  key: string | null;
  prev: SegmentClaim | null;
}

/** `<writerId>-000001`: the writer and its segment's sequence number. */
export function segmentId(writer: string, seq: number): string {
  return `${writer}-${String(seq).padStart(6, '0')}`;
}

/** The header row's chained body. */
export function segmentHeaderBody(header: SegmentHeader): string {
  return (
    `{"t":"segment","v":${SEGMENT_FORMAT_VERSION},"writer":${JSON.stringify(header.writer)},"seq":${header.seq},` +
    `"created":"${new Date(header.createdMs).toISOString()}","mac":"${header.mac}","key":${JSON.stringify(header.key)},"prev":${JSON.stringify(header.prev)}}`
  );
}

const HEX16 = /^[0-9a-f]{16}$/;

function isClaim(value: unknown): value is SegmentClaim {
  const claim = value as Partial<SegmentClaim> | null;
  return (
    typeof claim === 'object' &&
    claim !== null &&
    typeof claim.segment === 'string' &&
    claim.segment.length <= 256 &&
    Number.isSafeInteger(claim.seq) &&
    Number.isSafeInteger(claim.events) &&
    typeof claim.newest === 'string' &&
    Number.isFinite(Date.parse(claim.newest))
  );
}

/** A header body as read back, when every field is well formed; null otherwise. */
export function parseSegmentHeader(body: string): SegmentHeader | null {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    const { t, v, writer, seq, created, mac, key, prev } = parsed;
    if (t !== 'segment' || v !== SEGMENT_FORMAT_VERSION || typeof writer !== 'string' || !Number.isSafeInteger(seq)) return null;
    if (typeof created !== 'string' || !Number.isFinite(Date.parse(created))) return null;
    if (mac !== 'sha256' && mac !== 'hmac-sha256') return null;
    if (key !== null && !(typeof key === 'string' && HEX16.test(key))) return null;
    if (prev !== null && !isClaim(prev)) return null;
    return { writer, seq: seq as number, createdMs: Date.parse(created), mac, key: key as string | null, prev: prev as SegmentClaim | null };
  } catch {
    return null;
  }
}

/** An event row's chained body: `json` is the stored event (event-record.ts), `prevAtMs` when the row before it was written. */
export function eventRowBody(segment: string, seq: number, prevAtMs: number, json: string): string {
  return `{"t":"event","segment":${JSON.stringify(segment)},"seq":${seq},"prevAt":${prevAtMs},"event":${json}}`;
}

/** What the head of a segment (its last event) is bound to: a later row deleted from its end shows as a head past it. */
export function headBody(segment: string, lastSeq: number): Buffer {
  return Buffer.from(`{"t":"head","segment":${JSON.stringify(segment)},"seq":${lastSeq}}`);
}
