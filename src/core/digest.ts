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
  /** Links after this one, by the key of the segment that follows. */
  next: Map<unknown, ChainLink>;
}

const MAX_FANOUT = 256;
const MAX_LINKS = 20_000;
// Keys may be the blocks themselves, so the tree also bounds the text it keeps alive.
const MAX_LINKED_CHARS = 32_000_000;
// The hash state after each known chain of stable segments, as a tree from the empty
// prefix: a stable prefix is hashed once per process, then found by one lookup per segment.
let root = new Map<unknown, ChainLink>();
let links = 0;
let linkedChars = 0;

/**
 * Hashes a concatenation of segments incrementally and reports the sha256 of the prefix
 * after each one: equal to `sha256Hex(segments.slice(0, n).join(''))`. A segment pushed with
 * a key (its own digest, or an immutable object that stands for exactly its text) is
 * memoised; a segment pushed without one, and everything after it, is hashed afresh.
 */
export class PrefixHasher {
  private link: ChainLink | undefined;
  private fresh: Hash | undefined;
  private hex: string | undefined = EMPTY_SHA256;

  push(segment: string, key?: unknown): void {
    if (this.fresh === undefined && key !== undefined) {
      const siblings = this.link ? this.link.next : root;
      let link = siblings.get(key);
      if (!link) {
        const state = this.link ? this.link.state.copy() : createHash('sha256');
        state.update(segment, 'utf8');
        link = { state, hex: state.copy().digest('hex'), next: new Map() };
        linkedChars += segment.length;
        if (++links > MAX_LINKS || linkedChars > MAX_LINKED_CHARS) {
          root = new Map();
          links = 0;
          linkedChars = 0;
        } else if (siblings.size < MAX_FANOUT) {
          siblings.set(key, link);
        }
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
