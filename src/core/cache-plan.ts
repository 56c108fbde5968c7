/**
 * The prompt-cache plan. Provider caches match on exact prefixes, so the system prompt is
 * laid out most stable first and a boundary is placed after the last block of each cache
 * class. The route key names the worker-stable prefix, for OpenAI `prompt_cache_key`;
 * boundaries map to Anthropic `cache_control` breakpoints.
 *
 * @see https://platform.openai.com/docs/guides/prompt-caching
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
 */
import { PrefixHasher, sha256Hex, type PrefixStates } from './digest.js';
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
 * One boundary per cache class present, after its last block, with the sha256 of the
 * system prompt up to there; plus the sha256 of the whole system prompt. Segments must
 * come in non-decreasing cache-class order. `prefixes` remembers the hash state after
 * keyed segments, so a recurring stable prefix is hashed once. `engine` enters the route
 * key alone: the boundaries are the same for every engine.
 */
export function planCache(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates> = noMemo(),
  routeKeys: Memo<string, string> = noMemo(),
  engine: string | null = null,
): { cache: CachePlan; promptSha256: string } {
  const hasher = new PrefixHasher(prefixes);
  const boundaries: CacheBoundary[] = [];
  let chars = 0;
  let tokens = 0;
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
        prefixSha256: hasher.digest(),
        approxTokens: tokens,
        belowMinimum: tokens < PROVIDER_MINIMUM_TOKENS,
      });
    }
  }
  const anchor = boundaries.find((boundary) => boundary.class === 'worker-stable') ?? boundaries[0];
  return {
    cache: {
      schemaVersion: CACHE_SCHEMA_VERSION,
      routeKey: rememberedRouteKey(anchor?.prefixSha256 ?? hasher.digest(), engine, routeKeys),
      engine,
      minimumTokens: PROVIDER_MINIMUM_TOKENS,
      boundaries,
    },
    promptSha256: hasher.digest(),
  };
}

function rememberedRouteKey(workerStableSha256: string, engine: string | null, routeKeys: Memo<string, string>): string {
  const key = engine === null ? workerStableSha256 : `${workerStableSha256}|${engine}`;
  return routeKeys.get(key) ?? routeKeys.set(key, routeKeyFor(workerStableSha256, engine), 256);
}

/**
 * `cc<version>-<32 hex>`: stable while the worker-stable prefix, the schema version and the
 * engine are. Without an engine it is the key every earlier release derived.
 */
export function routeKeyFor(workerStableSha256: string, engine: string | null = null): string {
  const named = engine === null ? `${CACHE_SCHEMA_VERSION}:${workerStableSha256}` : `${CACHE_SCHEMA_VERSION}:${workerStableSha256}:engine=${engine}`;
  return `cc${CACHE_SCHEMA_VERSION}-${sha256Hex(named).slice(0, 32)}`;
}
