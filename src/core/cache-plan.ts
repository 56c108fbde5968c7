/**
 * The prompt-cache plan. Provider caches match on exact prefixes, so the system prompt is
 * laid out most stable first and a boundary is placed after the last block of each cache
 * class. The route key names the worker-stable prefix, for OpenAI `prompt_cache_key`;
 * boundaries map to Anthropic `cache_control` breakpoints.
 *
 * @see https://platform.openai.com/docs/guides/prompt-caching
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
 */
import { PrefixHasher, sha256Hex, type PrefixState, type PrefixStates } from './digest.js';
import { noMemo, type Memo } from './memo.js';
import { CACHE_CLASSES, type BlockKind, type CacheBoundary, type CacheClass, type CachePlan } from './types.js';

/** Bump when the layout or label syntax changes, so route keys rotate with it. */
export const CACHE_SCHEMA_VERSION = 1;

/** Below this many tokens OpenAI and most Anthropic models do not cache a prefix at all. */
export const PROVIDER_MINIMUM_TOKENS = 1024;

export interface PlannedSegment {
  kind: BlockKind;
  cacheClass: CacheClass;
  blockIndex: number;
  segment: string;
  /** Set when the segment recurs: a key that stands for exactly its text, so its prefix hash is reused. */
  key?: string | undefined;
  approxTokens: number;
}

/**
 * A planned prefix of a system prompt, to continue from: its boundaries, length, tokens, the
 * class of its last segment and the hash state after it. Immutable; shared by every plan
 * that continues it.
 */
export interface PlannedPrefix {
  readonly boundaries: readonly CacheBoundary[];
  readonly chars: number;
  readonly tokens: number;
  readonly lastClass: CacheClass | undefined;
  readonly hash: PrefixState | undefined;
}

const EMPTY_PREFIX: PlannedPrefix = Object.freeze({ boundaries: [], chars: 0, tokens: 0, lastClass: undefined, hash: undefined });

/**
 * One boundary per cache class present, after its last block, with the sha256 of the
 * system prompt up to there; plus the sha256 of the whole system prompt. Segments must
 * come in non-decreasing cache-class order. `prefixes` remembers the hash state after
 * keyed segments, so a recurring stable prefix is hashed once. Given `from` (a prefix
 * planned earlier with `planPrefix`, whose segments come first), only `segments` are
 * walked, from its hash state: the plan equals planning the prefix's segments and these
 * together.
 */
export function planCache(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates> = noMemo(),
  routeKeys: Memo<string, string> = noMemo(),
  from: PlannedPrefix = EMPTY_PREFIX,
): { cache: CachePlan; promptSha256: string } {
  const { cache, promptSha256 } = plan(segments, prefixes, routeKeys, from, false);
  return { cache, promptSha256 };
}

/** `planCache`, and the planned prefix to continue from (its hash state kept, not finished). */
export function planPrefix(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates> = noMemo(),
  routeKeys: Memo<string, string> = noMemo(),
): { cache: CachePlan; promptSha256: string; prefix: PlannedPrefix } {
  return plan(segments, prefixes, routeKeys, EMPTY_PREFIX, true);
}

function plan(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates>,
  routeKeys: Memo<string, string>,
  from: PlannedPrefix,
  continued: boolean,
): { cache: CachePlan; promptSha256: string; prefix: PlannedPrefix } {
  const hasher = new PrefixHasher(prefixes, from.hash);
  const boundaries: CacheBoundary[] = [...from.boundaries];
  const first = segments[0];
  if (first !== undefined && from.lastClass !== undefined) {
    if (CACHE_CLASSES.indexOf(first.cacheClass) < CACHE_CLASSES.indexOf(from.lastClass)) {
      throw new Error(`layout error: ${first.kind} (${first.cacheClass}) after ${from.lastClass}`);
    }
    // The prefix closed its last class; segments of the same class continue it, so that boundary moves.
    if (first.cacheClass === from.lastClass) boundaries.pop();
  }
  let chars = from.chars;
  let tokens = from.tokens;
  for (let i = 0; i < segments.length; i++) {
    const planned = segments[i]!;
    const next = segments[i + 1];
    hasher.push(planned.segment, planned.key);
    chars += planned.segment.length;
    tokens += planned.approxTokens;
    if (next && CACHE_CLASSES.indexOf(next.cacheClass) < CACHE_CLASSES.indexOf(planned.cacheClass)) {
      throw new Error(`layout error: ${next.kind} (${next.cacheClass}) after ${planned.kind} (${planned.cacheClass})`);
    }
    if (!next || next.cacheClass !== planned.cacheClass) {
      boundaries.push({
        class: planned.cacheClass,
        afterBlock: planned.kind,
        blockIndex: planned.blockIndex,
        prefixChars: chars,
        // The last boundary is the whole prompt: a plan that is not continued finishes its hash there instead of copying it.
        prefixSha256: next || continued ? hasher.digest() : hasher.finish(),
        approxTokens: tokens,
        belowMinimum: tokens < PROVIDER_MINIMUM_TOKENS,
      });
    }
  }
  const promptSha256 = continued ? hasher.digest() : hasher.finish();
  const anchor = boundaries.find((boundary) => boundary.class === 'worker-stable') ?? boundaries[0];
  const cache: CachePlan = {
    schemaVersion: CACHE_SCHEMA_VERSION,
    routeKey: rememberedRouteKey(anchor?.prefixSha256 ?? promptSha256, routeKeys),
    minimumTokens: PROVIDER_MINIMUM_TOKENS,
    boundaries,
  };
  if (!continued) return { cache, promptSha256, prefix: EMPTY_PREFIX };
  return {
    cache,
    promptSha256,
    prefix: {
      boundaries,
      chars,
      tokens,
      lastClass: segments.at(-1)?.cacheClass ?? from.lastClass,
      hash: hasher.snapshot() ?? from.hash,
    },
  };
}

function rememberedRouteKey(workerStableSha256: string, routeKeys: Memo<string, string>): string {
  return routeKeys.get(workerStableSha256) ?? routeKeys.set(workerStableSha256, routeKeyFor(workerStableSha256), 256);
}

/** `cc<version>-<32 hex>`: stable while the worker-stable prefix and schema version are. */
export function routeKeyFor(workerStableSha256: string): string {
  return `cc${CACHE_SCHEMA_VERSION}-${sha256Hex(`${CACHE_SCHEMA_VERSION}:${workerStableSha256}`).slice(0, 32)}`;
}
