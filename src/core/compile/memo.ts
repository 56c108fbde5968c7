/**
 * What a compiler may remember between compiles, and the shapes it remembers: prepared
 * blocks, and the laid-out stable prefix and input of a set of blocks.
 */
import type { PieceTokens, PlannedPrefix } from '../cache-plan.js';
import type { PrefixStates } from '../prefix-hasher.js';
import { area, noMemos, type MemosOf } from '../area.js';
import type { RedactionCounts } from '../pii.js';
import { NO_TIME_MEMO, type TimeMemo } from '../time.js';
import type { Block, BlockKind, PromptPiece } from '../types.js';

/** A block with its rendered segment; immutable and shared between calls through the memo. */
export interface PreparedBlock {
  readonly kind: BlockKind;
  readonly source: string;
  readonly content: string;
  readonly sha256: string;
  readonly approxTokens: number;
  readonly segment: string;
  /** Set for recurring (memoised) blocks: stands for exactly the segment, so the hash state after it is reused. */
  readonly segmentKey: string | undefined;
  /** Set for recurring blocks: names the block completely (its segment key and the redactions its source needed), for the parts memo. */
  readonly blockKey: string | undefined;
  readonly segmentTokens: number;
  /** PII its source needed redacted (brain-derived text only). */
  readonly redactions: Readonly<RedactionCounts>;
  /** The clock's: its segment's tokens by the compiler's tokenizer (kept with the block, a minute's). */
  readonly tokens?: PieceTokens;
}

/** One rendering of a source text: which kind, source and provenance it was rendered for, and the block (null when empty). */
export interface PreparedVariant {
  readonly kind: BlockKind;
  readonly source: string;
  readonly brainDerived: boolean;
  readonly block: PreparedBlock | null;
}

/**
 * What a compiler may remember between compiles, owned and bounded by the caller (the
 * service's cache set): rendered blocks by source text, the hash state after each stable
 * prefix, the laid-out stable prefix and input of a set of blocks (by `partKey`), route keys
 * by worker-stable digest, token counts and the clock. A compile's bytes never depend on
 * what was kept.
 */
export const COMPILER_AREAS = {
  /** Each source text's renderings (`PreparedVariant`), by the text. */
  blocks: area<string, readonly PreparedVariant[]>('compiler.blocks', 0.09),
  /** Token counts of system-prompt pieces (the cache plan's `tokens`): a stable block's by its digest key, the clock's label and line pieces (day, ` HH:MM`, zone) by their text. */
  tokens: area<string, PieceTokens>('compiler.tokens', 0.0075),
  /** Token counts of session tool definitions, by the (never mutated) array they came in, and the tokenizer that counted them. */
  toolTokens: area<object, ToolTokens>('compiler.toolTokens', 0.0025),
  /** The hash state after each stable prefix. */
  prefixes: area<string, PrefixStates>('compiler.prefixes', 0.03),
  /** The stable prefix of a set of system blocks, laid out, planned and hashed once: by `partKey`. */
  stableParts: area<string, StablePart>('compiler.stableParts', 0.03),
  /** The input prompt of a set of input blocks: by `partKey`. */
  inputParts: area<string, InputPart>('compiler.inputParts', 0.01),
  routeKeys: area<string, string>('compiler.routeKeys', 0.00125),
  /**
   * Rendered clock blocks by their line, a few minutes' worth: compiles within a minute render
   * it once. Not a recurring block: no hash state is kept after it, so a new minute on every
   * compile leaves nothing behind but this small area's entries.
   */
  clocks: area<string, PreparedBlock>('compiler.time.clocks', 0.00125),
};

/** `COMPILER_AREAS`, and the clock's `time` areas (one set, shared with the sources). */
export interface CompilerMemo extends MemosOf<typeof COMPILER_AREAS> {
  readonly time: TimeMemo;
}

export const NO_COMPILER_MEMO: CompilerMemo = Object.freeze({ ...noMemos(COMPILER_AREAS), time: NO_TIME_MEMO });

/** A count of tool definitions, and the tokenizer it is by (a memo may be shared by compilers that count otherwise). */
export interface ToolTokens {
  readonly tokenizer: string;
  readonly count: number;
}

/**
 * The system blocks before the first volatile one, laid out, joined, planned and hashed:
 * what every compile with these blocks shares. Immutable; its blocks, segments and cache
 * plan are handed out to every compile that uses it.
 */
export interface StablePart {
  readonly blocks: readonly Block[];
  readonly segments: readonly string[];
  /** The segments joined: the system prompt up to the first volatile block. */
  readonly text: string;
  /** The same text as the prompt piece every compile with this prefix shares (`CompiledContext.prompt`). */
  readonly piece: PromptPiece;
  readonly byKind: Readonly<Partial<Record<BlockKind, number>>>;
  /** Segment tokens, summed. */
  readonly tokens: number;
  readonly redactions: Readonly<RedactionCounts>;
  /** The plan of this prefix, to finish with a compile's volatile tail, engine and tool tokens. */
  readonly plan: PlannedPrefix;
}

/** The input prompt of a list of input blocks: joined, hashed, summed. Immutable. */
export interface InputPart {
  readonly blocks: readonly Block[];
  readonly segments: readonly string[];
  readonly text: string | null;
  readonly piece: PromptPiece | null;
  readonly sha256: string | null;
  readonly byKind: Readonly<Partial<Record<BlockKind, number>>>;
  /** Segment tokens, summed. */
  readonly tokens: number;
  readonly redactions: Readonly<RedactionCounts>;
}
