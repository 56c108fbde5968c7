/**
 * The prompt-cache plan. Provider caches match on exact prefixes, so the system prompt is
 * laid out most stable first and a boundary is placed after the last block of each cache
 * class. The route key names the worker-stable prefix, for OpenAI `prompt_cache_key`;
 * boundaries map to Anthropic `cache_control` breakpoints.
 *
 * @see https://platform.openai.com/docs/guides/prompt-caching
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
 */
import { sha256Hex } from './digest.js';
import { PrefixHasher, type PrefixState, type PrefixStates } from './prefix-hasher.js';
import { noMemo, type Memo } from './memo.js';
import { clockLineCuts } from './time.js';
import { ESTIMATE_COUNTER, type TokenCounter } from './tokens.js';
import { CACHE_CLASSES, type BlockKind, type CacheBoundary, type CacheClass, type CachePlan, type CacheProvider } from './types.js';

/** Bump when the layout or label syntax changes, so route keys rotate with it. */
export const CACHE_SCHEMA_VERSION = 1;

/** Below this many tokens OpenAI and most Anthropic models do not cache a prefix at all. */
export const PROVIDER_MINIMUM_TOKENS = 1024;

/** How a provider caches a prompt: what a plan for it judges each boundary against. */
export interface CacheRule {
  readonly provider: CacheProvider;
  /** `prefix`: exact prefixes of at least `minimumTokens`, tool definitions included, are cached; `none`: nothing is. */
  readonly caching: 'prefix' | 'none';
  readonly minimumTokens: number | null;
}

/**
 * Per provider. OpenAI (Realtime too; Azure OpenAI takes its shape) caches exact prefixes of
 * 1,024 tokens or more automatically, the tool definitions included; Gemini Live caches
 * nothing a caller can plan for (its Live models list "Caching: Not supported"), so its
 * boundaries are not judged at all. docs/providers.md has where each fact was read.
 *
 * @see https://platform.openai.com/docs/guides/prompt-caching
 * @see https://ai.google.dev/gemini-api/docs/models/gemini-3.1-flash-live-preview
 */
export const CACHE_RULES: Readonly<Record<CacheProvider, CacheRule>> = Object.freeze({
  openai: Object.freeze({ provider: 'openai', caching: 'prefix', minimumTokens: PROVIDER_MINIMUM_TOKENS }),
  gemini: Object.freeze({ provider: 'gemini', caching: 'none', minimumTokens: null }),
});

/** Whether `tokens` are too few for `rule`'s provider to cache; null when it caches nothing anyway. */
export function belowMinimum(tokens: number, rule: CacheRule): boolean | null {
  return rule.minimumTokens === null ? null : tokens < rule.minimumTokens;
}

export interface PlannedSegment {
  kind: BlockKind;
  cacheClass: CacheClass;
  blockIndex: number;
  segment: string;
  /** Set when the segment recurs: a key that stands for exactly its text, so its prefix hash is reused. */
  key?: string | undefined;
  approxTokens: number;
  /** An unkeyed segment's tokens alone (its text after the separator), when its block was counted with it (the clock, kept per minute). */
  tokens?: PieceTokens | undefined;
}

/** A keyed piece's token counts by one tokenizer: alone (it ends the prefix) and followed by the separator, each once needed. */
export interface PieceTokens {
  readonly tokenizer: string;
  readonly alone?: number;
  readonly followed?: number;
}

/** How the plan counts tokens (the tokenizer, where it remembers keyed pieces, the session's tool definitions already counted) and judges them. */
export interface PlanTokens {
  counter: TokenCounter;
  /** Counts of keyed pieces by segment key (the same string on every call, so a lookup hashes nothing new): a stable prefix is counted once. */
  memo: Memo<string, PieceTokens>;
  /** Tokens of the tool definitions sent beside the instructions, counted into every boundary. */
  toolTokens: number;
  /** The provider whose caching the boundaries are judged by; default OpenAI's. */
  rule?: CacheRule;
}

const ESTIMATED: PlanTokens = Object.freeze({ counter: ESTIMATE_COUNTER, memo: noMemo<string, PieceTokens>(), toolTokens: 0 });

/** Every block after the first is preceded by this separator in the system prompt. */
const SEPARATOR = '\n\n';

/**
 * A planned prefix of a system prompt, to continue from: its boundaries, length, token
 * counts (with the tool tokens it was planned with), the class of its last segment and the
 * hash state after it. Immutable; shared by every plan that continues it.
 */
export interface PlannedPrefix {
  readonly boundaries: readonly CacheBoundary[];
  /** How many segments it holds. */
  readonly segments: number;
  readonly chars: number;
  readonly approxTokens: number;
  /** `toolTokens` plus the tokens of every piece, each followed by the separator: where a continuation's count starts. */
  readonly counted: number;
  readonly toolTokens: number;
  /** The tokenizer its counts are by; undefined for the empty prefix. */
  readonly tokenizer: string | undefined;
  readonly lastClass: CacheClass | undefined;
  readonly hash: PrefixState | undefined;
}

const EMPTY_PREFIX: PlannedPrefix = Object.freeze({
  boundaries: [],
  segments: 0,
  chars: 0,
  approxTokens: 0,
  counted: 0,
  toolTokens: 0,
  tokenizer: undefined,
  lastClass: undefined,
  hash: undefined,
});

/**
 * One boundary per cache class present, after its last block, with the sha256 of the
 * system prompt up to there; plus the sha256 of the whole system prompt. Segments must
 * come in non-decreasing cache-class order. `prefixes` remembers the hash state after
 * keyed segments, so a recurring stable prefix is hashed once. `engine` enters the route
 * key alone: the boundaries are the same for every engine.
 *
 * Each boundary's `tokens` is the tokenizer's count of exactly `systemPrompt.slice(0,
 * prefixChars)`, plus `toolTokens`, found without counting a stable prefix again: the prompt
 * is counted in pieces cut just before each label's `<<cc`, which a newline precedes, and no
 * o200k or cl100k pre-token spans a newline followed by `<` — so the pieces' counts add up
 * to the whole (test/core/cache-plan.test.ts holds this against counting the prefix whole).
 * A piece is a block from its label on, followed by the separator when another block
 * follows; pieces are remembered in `tokens.memo` by key; the unkeyed clock, counted alone, by its label's and line pieces' texts (`countLabelled`), never whole. `belowMinimum` is judged on `tokens`.
 *
 * Given `from` (a prefix planned earlier with `planPrefix` by the same tokenizer, whose
 * segments come first), only `segments` are walked, from its hash state and token count:
 * the plan equals planning the prefix's segments and these together, whatever the engine
 * and tool tokens of either.
 */
export function planCache(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates> = noMemo(),
  routeKeys: Memo<string, string> = noMemo(),
  engine: string | null = null,
  tokens: PlanTokens = ESTIMATED,
  from: PlannedPrefix = EMPTY_PREFIX,
): { cache: CachePlan; promptSha256: string } {
  const { cache, promptSha256 } = plan(segments, prefixes, routeKeys, engine, tokens, from, false);
  return { cache, promptSha256 };
}

/** The planned prefix of `segments`, to continue with `planCache` (its hash state kept, not finished; its last piece also counted as followed). */
export function planPrefix(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates> = noMemo(),
  tokens: PlanTokens = ESTIMATED,
): PlannedPrefix {
  return plan(segments, prefixes, noMemo(), null, tokens, EMPTY_PREFIX, true).prefix;
}

function plan(
  segments: readonly PlannedSegment[],
  prefixes: Memo<string, PrefixStates>,
  routeKeys: Memo<string, string>,
  engine: string | null,
  tokens: PlanTokens,
  from: PlannedPrefix,
  continued: boolean,
): { cache: CachePlan; promptSha256: string; prefix: PlannedPrefix } {
  const { counter, memo } = tokens;
  if (from.tokenizer !== undefined && from.tokenizer !== counter.name) {
    throw new Error(`cache plan: a prefix counted by ${from.tokenizer} continued with ${counter.name}`);
  }
  const hasher = new PrefixHasher(prefixes, from.hash);
  const rule = tokens.rule ?? CACHE_RULES.openai;
  // The prefix's boundaries counted its own tool tokens and were judged for its provider; this plan's may differ.
  const shift = tokens.toolTokens - from.toolTokens;
  const boundaries: CacheBoundary[] = from.boundaries.map((boundary) => {
    const count = boundary.tokens + shift;
    const below = belowMinimum(count, rule);
    return shift === 0 && below === boundary.belowMinimum ? boundary : { ...boundary, tokens: count, belowMinimum: below };
  });
  const first = segments[0];
  if (first !== undefined && from.lastClass !== undefined) {
    if (CACHE_CLASSES.indexOf(first.cacheClass) < CACHE_CLASSES.indexOf(from.lastClass)) {
      throw new Error(`layout error: ${first.kind} (${first.cacheClass}) after ${from.lastClass}`);
    }
    // The prefix closed its last class; segments of the same class continue it, so that boundary moves.
    if (first.cacheClass === from.lastClass) boundaries.pop();
  }
  const piece = (planned: PlannedSegment, index: number, followed: boolean): number => {
    const text = () => (index === 0 ? planned.segment : planned.segment.slice(SEPARATOR.length));
    // A segment rendered per compile (the clock, last of the prompt) has no key: it is counted alone from its label and
    // its line's pieces, each remembered, and not kept whole (a minute's entry would only push its pieces out).
    if (planned.key === undefined && !followed) {
      const counted = planned.tokens;
      return counted?.tokenizer === counter.name && counted.alone !== undefined ? counted.alone : countLabelled(text(), counter, memo);
    }
    // Followed, an unkeyed segment's text, a line, names it as well.
    const key = planned.key ?? planned.segment;
    const field = followed ? 'followed' : 'alone';
    const known = memo.get(key);
    const same = known?.tokenizer === counter.name ? known : undefined;
    if (same?.[field] !== undefined) return same[field];
    const count = followed ? counter.count(text() + SEPARATOR) : counter.count(text());
    memo.set(key, { ...same, tokenizer: counter.name, [field]: count }, 2 * key.length + 96);
    return count;
  };
  let chars = from.chars;
  let approx = from.approxTokens;
  // Tokens of the pieces before this segment, each followed by the separator.
  let counted = from.counted + shift;
  for (let i = 0; i < segments.length; i++) {
    const planned = segments[i]!;
    const next = segments[i + 1];
    const index = from.segments + i;
    hasher.push(planned.segment, planned.key);
    chars += planned.segment.length;
    approx += planned.approxTokens;
    if (next && CACHE_CLASSES.indexOf(next.cacheClass) < CACHE_CLASSES.indexOf(planned.cacheClass)) {
      throw new Error(`layout error: ${next.kind} (${next.cacheClass}) after ${planned.kind} (${planned.cacheClass})`);
    }
    if (!next || next.cacheClass !== planned.cacheClass) {
      const exact = counted + piece(planned, index, false);
      boundaries.push({
        class: planned.cacheClass,
        afterBlock: planned.kind,
        blockIndex: planned.blockIndex,
        prefixChars: chars,
        // The last boundary is the whole prompt: a plan that is not continued finishes its hash there instead of copying it.
        prefixSha256: next || continued ? hasher.digest() : hasher.finish(),
        approxTokens: approx,
        tokens: exact,
        belowMinimum: belowMinimum(exact, rule),
      });
    }
    // A prefix to continue counts its last piece followed too: whatever continues it comes after a separator.
    if (next || continued) counted += piece(planned, index, true);
  }
  const promptSha256 = continued ? hasher.digest() : hasher.finish();
  const anchor = boundaries.find((boundary) => boundary.class === 'worker-stable') ?? boundaries[0];
  const cache: CachePlan = {
    schemaVersion: CACHE_SCHEMA_VERSION,
    routeKey: rememberedRouteKey(anchor?.prefixSha256 ?? promptSha256, engine, routeKeys),
    engine,
    tokenizer: counter.name,
    provider: rule.provider,
    caching: rule.caching,
    minimumTokens: rule.minimumTokens,
    toolTokens: tokens.toolTokens,
    boundaries,
  };
  if (!continued) return { cache, promptSha256, prefix: EMPTY_PREFIX };
  return {
    cache,
    promptSha256,
    prefix: {
      boundaries,
      segments: from.segments + segments.length,
      chars,
      approxTokens: approx,
      counted,
      toolTokens: tokens.toolTokens,
      tokenizer: counter.name,
      lastClass: segments.at(-1)?.cacheClass ?? from.lastClass,
      hash: hasher.state() ?? from.hash,
    },
  };
}

/** A letter or digit: no o200k or cl100k pre-token holds a newline followed by one. */
const WORD_START = /^[\p{L}\p{N}]/u;

/** The tokenizers whose counts add up over pieces cut before a letter or digit that follows a newline (an estimate by length does not). */
const preTokenized = (name: string): boolean => name === 'o200k_base' || name === 'cl100k_base';

/**
 * The tokens of an unkeyed piece (the clock: its label line, a newline, then a line new every
 * minute), counted as its label line with the newline, remembered, plus the rest. No pre-token
 * spans a newline followed by a letter or digit (the pattern's word and number alternatives
 * cannot hold a newline; its punctuation one can only end with newlines or slashes; the rest
 * are whitespace), so the two counts add up to the whole (test/core/cache-plan-tokens.test.ts
 * holds this against counting the piece whole, minute by minute). Anything else is counted whole.
 */
export function countLabelled(text: string, counter: TokenCounter, memo: Memo<string, PieceTokens>): number {
  const cut = text.indexOf('\n') + 1;
  if (!preTokenized(counter.name) || cut === 0 || !WORD_START.test(text.slice(cut, cut + 2))) return counter.count(text);
  // The label by its own text, which no segment key (a digest, or a segment's text after its separator) equals.
  return rememberedCount(text.slice(0, cut), counter, memo) + countClockLine(text.slice(cut), counter, memo);
}

/**
 * The tokens of a line shaped like the clock's, `<day>, HH:MM (<zone>)`, counted as three
 * remembered pieces: the day up to its comma, ` HH:MM`, and ` (<zone>)`, so a new minute
 * costs three lookups, not a BPE run. Each cut is a pre-token boundary of o200k and cl100k
 * whatever the day and zone hold: a comma followed by a space ends its pre-token (the
 * punctuation alternative stops at whitespace; no word alternative ends in a comma); a space
 * followed by a digit is a pre-token alone; two digits followed by a space are a number
 * pre-token, and ` (` starts one. Byte-pair merges never cross a pre-token, so the pieces'
 * counts add up to the line's (test/core/cache-plan-tokens.test.ts holds this for every
 * minute of a day in several zones). A line of another shape is counted whole.
 */
export function countClockLine(line: string, counter: TokenCounter, memo: Memo<string, PieceTokens>): number {
  if (!preTokenized(counter.name)) return counter.count(line);
  const cuts = clockLineCuts(line);
  if (cuts === undefined) return counter.count(line);
  const { time, zone } = cuts;
  return rememberedCount(line.slice(0, time), counter, memo) + rememberedCount(line.slice(time, zone), counter, memo) + rememberedCount(line.slice(zone), counter, memo);
}

/** `counter.count(text)`, remembered in `memo` by the text itself (no segment key, a digest or a text after its separator, equals a line's piece). */
function rememberedCount(text: string, counter: TokenCounter, memo: Memo<string, PieceTokens>): number {
  const known = memo.get(text);
  if (known?.tokenizer === counter.name && known.alone !== undefined) return known.alone;
  const count = counter.count(text);
  memo.set(text, { tokenizer: counter.name, alone: count }, 2 * text.length + 96);
  return count;
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
