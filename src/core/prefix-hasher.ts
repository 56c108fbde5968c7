import { createHash, type Hash } from 'node:crypto';
import { sha256Hex } from './digest.js';
import { noMemo, type Memo } from './memo.js';

const EMPTY_SHA256 = sha256Hex('');

/** The hash state after a prefix of segments, and its digest; shared through a memo, never updated in place. */
export interface PrefixState {
  readonly state: Hash;
  readonly hex: string;
}

/** The states after one keyed segment, by the digest of the prefix before it. */
export type PrefixStates = ReadonlyMap<string, PrefixState>;

/** How many prefixes one segment is remembered after (a stable block follows few distinct ones). */
const MAX_PARENTS = 64;

/**
 * Hashes a concatenation of segments incrementally and reports the sha256 of the prefix
 * after each one: equal to `sha256Hex(segments.slice(0, n).join(''))`. A segment pushed with
 * a key (a string that stands for exactly its text, such as its kind, source and digest)
 * is looked up in `memo` by that key, then by the digest before it, so a stable prefix is
 * hashed once, then found by two lookups per segment (of strings the caller keeps, so no
 * key is built per call); a segment pushed without one, and everything after it, is hashed
 * afresh.
 */
export class PrefixHasher {
  private link: PrefixState | undefined;
  private fresh: Hash | undefined;
  private hex: string | undefined = EMPTY_SHA256;

  constructor(
    private readonly memo: Memo<string, PrefixStates> = noMemo(),
    /** The state after segments already hashed (a prefix planned earlier); the walk continues from it. */
    from?: PrefixState,
  ) {
    if (from !== undefined) {
      this.link = from;
      this.hex = from.hex;
    }
  }

  push(segment: string, key?: string): void {
    if (this.fresh === undefined && key !== undefined) {
      const parent = this.hex!;
      const known = this.memo.get(key);
      let link = known?.get(parent);
      if (!link) {
        const state = this.link ? this.link.state.copy() : createHash('sha256');
        state.update(segment, 'utf8');
        link = { state, hex: state.copy().digest('hex') };
        // Copied, never changed in place: a memo entry is shared. A native hash state is a few hundred bytes.
        const states = new Map(known !== undefined && known.size < MAX_PARENTS ? known : []).set(parent, link);
        this.memo.set(key, states, 2 * key.length + 768 * states.size);
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

  /** `digest()` for the last time: the running state is finished rather than copied, so nothing may be pushed after it. */
  finish(): string {
    if (this.hex === undefined) {
      this.hex = this.fresh!.digest('hex');
      this.fresh = undefined;
      this.link = undefined;
    }
    return this.hex;
  }

  /** The state after everything pushed so far, to continue from later (never updated in place); undefined before any push. */
  state(): PrefixState | undefined {
    if (this.fresh !== undefined) return { state: this.fresh.copy(), hex: this.digest() };
    return this.link;
  }
}
