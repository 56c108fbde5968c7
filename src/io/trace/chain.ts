import { createHash, createHmac } from 'node:crypto';
import type { ChainStatusName } from '../../../schemas/trace.js';

/**
 * Tamper evidence for traces, independent of where they are stored (docs/traces.md,
 * "Tamper evidence"). A writer's records form one hash chain: each record carries the link
 * of the record before it (`previous`) and its own link, a MAC over that previous link and
 * the record's bytes — SHA-256 without a key, HMAC-SHA256 with `TRACE_SIGNING_KEY`. Pure:
 * bytes in, links out; no file system, clock or configuration. Checking a chain is
 * chain-check.ts.
 */

/** The previous link of a writer's very first record. */
export const GENESIS_LINK = '0'.repeat(64);

export type ChainMac = 'sha256' | 'hmac-sha256';

/**
 * What a record's link proves (the names are `ChainStatusSchema`'s), weakest last but one:
 * - `signed`: an HMAC under the configured key holds — nobody without the key wrote it;
 * - `linked`: a SHA-256 link holds — consistent, but anyone who can write the store could have recomputed it;
 * - `unchained`: written before chaining (format v2) — nothing to check;
 * - `unverifiable`: an HMAC under a key this process does not hold (none configured, or another one);
 * - `broken`: the link does not hold, or the record is out of place.
 */
export type ChainStatus = ChainStatusName;

/** Computes links for a writer, and checks them for a reader. */
export interface ChainSigner {
  readonly mac: ChainMac;
  /** Names the key without revealing it (16 hex digits of a labelled sha256); null without a key. */
  readonly keyId: string | null;
  /** The link of a record: MAC over the previous link (64 hex digits) and the record's bytes (a string is taken as its UTF-8). */
  link(previous: string, body: Buffer | string): string;
}

/** The key id written into file headers, so a reader can tell "another key" from "forged". */
export function chainKeyId(key: string): string {
  return createHash('sha256').update('context-compiler trace signing key\0').update(key, 'utf8').digest('hex').slice(0, 16);
}

/** A SHA-256 chain without a key, or an HMAC-SHA256 chain with one. Deterministic. */
export function createChainSigner(key: string | null = null): ChainSigner {
  if (key === null || key === '') {
    return { mac: 'sha256', keyId: null, link: (previous, body) => createHash('sha256').update(previous).update(body).digest('hex') };
  }
  const secret = Buffer.from(key, 'utf8');
  return {
    mac: 'hmac-sha256',
    keyId: chainKeyId(key),
    link: (previous, body) => createHmac('sha256', secret).update(previous).update(body).digest('hex'),
  };
}

/** The fixed-size seal a chained record ends with: `,"p":"<previous>","c":"<link>"}` (before the newline). */
export const SEAL_BYTES = 6 + 64 + 7 + 64 + 2;

/** Closes a record body (a JSON object without its closing brace) with its chain fields and a newline. */
export function sealText(previous: string, link: string): string {
  return `,"p":"${previous}","c":"${link}"}\n`;
}

/**
 * Where a writer's previous segment (a file) ended, as the next one records it in its
 * header: enough to tell a retention delete from a removal, and a clean hand-over from a
 * file cut short.
 */
export interface Predecessor {
  /** Its name, so a reader finds it. */
  file: string;
  /** Its size, in bytes, when the writer moved on: everything the writer vouches for. */
  bytes: number;
  /** Byte offset of its last chained record (its header when it holds no event). */
  last: number;
  events: number;
  /** Its newest event (its creation while it holds none): when retention may delete it. */
  newest: string;
  /**
   * Set when the writer moved on because the file was not as it left it (truncated,
   * grown, replaced or removed under it): the size it found, null when gone or replaced.
   */
  found?: { bytes: number | null };
}
