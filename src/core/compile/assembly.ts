/**
 * Assembly: the compiled context of the blocks chosen. The stable prefix (every system block
 * before the first volatile one) is laid out, joined, planned and hashed once per distinct
 * set of blocks, the input likewise; a compile adds only the volatile tail (the clock line),
 * continuing the prefix's plan and hash state. Every part is laid out by the one loop,
 * `layOut`.
 */
import { CACHE_RULES, planCache, planPrefix, type PlannedSegment, type PlanTokens } from '../cache-plan.js';
import { PrefixHasher } from '../prefix-hasher.js';
import { addCounts, NO_REDACTIONS, type RedactionCounts } from '../pii.js';
import type { TokenCounter } from '../tokens.js';
import type { Block, BlockKind, Budget, CompiledContext, CompileInput } from '../types.js';
import { blockOf, PLACEMENT } from './blocks.js';
import type { CompilerMemo, InputPart, PreparedBlock, StablePart } from './memo.js';

/** Blocks laid out in prompt order, and what a compile sums over them. */
interface Layout {
  readonly blocks: Block[];
  readonly segments: string[];
  /** The segments laid out by this layout's own `layOut` calls, for the cache plan. */
  readonly planned: PlannedSegment[];
  readonly byKind: Partial<Record<BlockKind, number>>;
  /** Segment tokens, summed. */
  tokens: number;
  readonly redactions: RedactionCounts;
}

function emptyLayout(): Layout {
  return { blocks: [], segments: [], planned: [], byKind: {}, tokens: 0, redactions: { email: 0, phone: 0 } };
}

/** Lays `prepared` out after what `layout` holds (and into `hasher`, when given); returns their segments joined. */
function layOut(layout: Layout, prepared: readonly PreparedBlock[], hasher?: PrefixHasher): string {
  let text = '';
  for (const each of prepared) {
    const placement = PLACEMENT[each.kind];
    layout.planned.push({
      kind: each.kind,
      cacheClass: placement.cacheClass,
      blockIndex: layout.blocks.length,
      segment: each.segment,
      key: each.segmentKey,
      approxTokens: each.segmentTokens,
      tokens: each.tokens,
    });
    hasher?.push(each.segment, each.segmentKey);
    layout.blocks.push(blockOf(each));
    layout.segments.push(each.segment);
    text += each.segment;
    layout.byKind[each.kind] = (layout.byKind[each.kind] ?? 0) + each.approxTokens;
    layout.tokens += each.segmentTokens;
    addCounts(layout.redactions, each.redactions);
  }
  return text;
}

/** Tokens of the session's tool definitions, remembered by the array they came in (callers never mutate it). */
function sessionToolTokens(memo: CompilerMemo, tokenizer: TokenCounter, tools: CompileInput['sessionTools']): number {
  if (tools === undefined || tools.length === 0) return 0;
  const remembered = memo.toolTokens.get(tools);
  if (remembered !== undefined && remembered.tokenizer === tokenizer.name) return remembered.count;
  const count = tokenizer.countTools(tools);
  memo.toolTokens.set(tools, { tokenizer: tokenizer.name, count }, 96);
  return count;
}

/** The compiled context of the blocks chosen: the stable prefix and the input as laid out once, and this compile's volatile tail. */
export function assemble(
  memo: CompilerMemo,
  tokenizer: TokenCounter,
  input: CompileInput,
  chosen: { system: PreparedBlock[]; inputs: PreparedBlock[]; engine: string | null; omitted: Budget['omitted']; warnings: string[] },
): CompiledContext {
  const { system, inputs } = chosen;
  let split = 0;
  while (split < system.length && PLACEMENT[system[split]!.kind].cacheClass !== 'volatile') split++;
  const planTokens: PlanTokens = {
    counter: tokenizer,
    memo: memo.tokens,
    toolTokens: sessionToolTokens(memo, tokenizer, input.sessionTools),
    rule: CACHE_RULES[input.provider ?? 'openai'],
  };
  const stable = stablePart(memo, planTokens, split === system.length ? system : system.slice(0, split));
  const part = inputPart(memo, inputs);

  // Object.assign, not a spread: V8 copies an object with keys such as 'hard-rules' by spread several times slower.
  const layout: Layout = {
    blocks: [...stable.blocks],
    segments: [...stable.segments],
    planned: [],
    byKind: Object.assign({}, stable.byKind),
    tokens: stable.tokens,
    redactions: addCounts({ email: 0, phone: 0 }, stable.redactions),
  };
  const volatile = layOut(layout, system.slice(split));
  // The engine and the session's tool tokens are this compile's own: the shared prefix is finished with them.
  const { cache, promptSha256 } = planCache(layout.planned, memo.prefixes, memo.routeKeys, chosen.engine, planTokens, stable.plan);
  const { blocks, byKind, redactions } = layout;
  for (const block of part.blocks) blocks.push(block);
  for (const [kind, tokens] of Object.entries(part.byKind) as Array<[BlockKind, number]>) byKind[kind] = (byKind[kind] ?? 0) + tokens;
  addCounts(redactions, part.redactions);

  const systemPrompt = stable.text + volatile;
  const inputPrompt = part.text;
  const instructions = inputPrompt === null ? systemPrompt : `${systemPrompt}\n\n${inputPrompt}`;
  const { policy } = input;
  return {
    blocks,
    systemPrompt,
    inputPrompt,
    instructions,
    segments: { system: layout.segments, input: [...part.segments] },
    prompt: { stable: stable.piece, tail: volatile, input: part.piece },
    budget: {
      limitChars: policy.limitChars,
      usedChars: instructions.length,
      remainingChars: policy.limitChars - instructions.length,
      omitted: chosen.omitted,
      blocks: policy.blocks,
    },
    cache,
    promptSha256,
    inputSha256: part.sha256,
    tokens: { total: layout.tokens + part.tokens + (inputPrompt === null ? 0 : 1), byKind },
    redactions,
    warnings: chosen.warnings,
  };
}

/**
 * The parts memos' key: the blocks' `blockKey`s, in order, or undefined when one of them
 * does not recur (a turn's message, evidence): such a part is laid out afresh.
 */
function partKey(blocks: readonly PreparedBlock[]): string | undefined {
  let key = '';
  for (const prepared of blocks) {
    if (prepared.blockKey === undefined) return undefined;
    key += `${prepared.blockKey}\0`;
  }
  return key;
}

function stablePart(memo: CompilerMemo, planTokens: PlanTokens, system: readonly PreparedBlock[]): StablePart {
  const key = partKey(system);
  const known = key === undefined ? undefined : memo.stableParts.get(key);
  // Its token counts are one tokenizer's: a memo shared by compilers with another recomputes it.
  if (known !== undefined && known.plan.tokenizer === planTokens.counter.name) return known;
  const layout = emptyLayout();
  const text = layOut(layout, system);
  const plan = planPrefix(layout.planned, memo.prefixes, planTokens);
  const { blocks, segments, byKind, tokens, redactions } = layout;
  const part: StablePart = { blocks, segments, text, piece: { text }, byKind, tokens, redactions, plan };
  // The text, its blocks' contents (about the same again) and a native hash state per boundary.
  return key === undefined ? part : memo.stableParts.set(key, part, 2 * key.length + 4 * text.length + 1024 * (plan.boundaries.length + 1));
}

function inputPart(memo: CompilerMemo, inputs: readonly PreparedBlock[]): InputPart {
  if (inputs.length === 0) return EMPTY_INPUT;
  const key = partKey(inputs);
  const known = key === undefined ? undefined : memo.inputParts.get(key);
  if (known !== undefined) return known;
  const hasher = new PrefixHasher(memo.prefixes);
  const layout = emptyLayout();
  const text = layOut(layout, inputs, hasher);
  const { blocks, segments, byKind, tokens, redactions } = layout;
  const part: InputPart = { blocks, segments, text, piece: { text }, sha256: hasher.finish(), byKind, tokens, redactions };
  return key === undefined ? part : memo.inputParts.set(key, part, 2 * key.length + 4 * text.length + 512);
}

const EMPTY_INPUT: InputPart = Object.freeze({ blocks: [], segments: [], text: null, piece: null, sha256: null, byKind: {}, tokens: 0, redactions: NO_REDACTIONS });
