import { createHash, type Hash } from 'node:crypto';
import { BoundedMemo } from './memo.js';

/** sha256 hex of the UTF-8 bytes of `text`. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

const EMPTY_SHA256 = sha256Hex('');
const digestMemo = new BoundedMemo<string, string>(8192, 16_000_000);

/** sha256 hex of `text`, memoised (for texts that repeat on every call). */
export function memoSha256Hex(text: string): string {
  const known = digestMemo.get(text);
  if (known !== undefined) return known;
  return digestMemo.set(text, sha256Hex(text), text.length + 64);
}

interface ChainLink {
  state: Hash;
  hex: string;
}

// Hash state after a known chain of segments, keyed by the digest of the prefix before the
// segment and then by the segment's own digest: a stable prefix is hashed once per process.
const chainMemo = new BoundedMemo<string, Map<string, ChainLink>>(4096);

/**
 * Hashes a concatenation of segments incrementally and reports the sha256 of the prefix
 * after each one: equal to `sha256Hex(segments.slice(0, n).join(''))`. Segments pushed
 * with their own digest are memoised (stable blocks); a segment pushed without one, and
 * everything after it, is hashed afresh (per-turn text).
 */
export class PrefixHasher {
  private link: ChainLink | undefined;
  private fresh: Hash | undefined;
  private hex: string | undefined = EMPTY_SHA256;

  push(segment: string, segmentSha256?: string): void {
    if (this.fresh === undefined && segmentSha256 !== undefined) {
      const prefix = this.hex!;
      let next = chainMemo.get(prefix);
      if (!next) next = chainMemo.set(prefix, new Map());
      let link = next.get(segmentSha256);
      if (!link) {
        const state = this.link ? this.link.state.copy() : createHash('sha256');
        state.update(segment, 'utf8');
        link = { state, hex: state.copy().digest('hex') };
        if (next.size < 256) next.set(segmentSha256, link);
      }
      this.link = link;
      this.hex = link.hex;
      return;
    }
    this.fresh ??= this.link ? this.link.state.copy() : createHash('sha256');
    this.fresh.update(segment, 'utf8');
    this.hex = undefined;
  }

  /** sha256 hex of everything pushed so far. */
  digest(): string {
    this.hex ??= this.fresh!.copy().digest('hex');
    return this.hex;
  }
}
