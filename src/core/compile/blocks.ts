/**
 * Where each kind of block goes (`PLACEMENT`), and how a source text becomes a block:
 * normalised, scrubbed when it comes from the brain, labelled or encoded, hashed and
 * counted (`render`), once per text while the memo keeps it (`prepare`, `clockBlock`).
 */
import { countLabelled, type PieceTokens } from '../cache-plan.js';
import { sha256Hex } from '../digest.js';
import { NO_REDACTIONS, scrubPii, type RedactionCounts } from '../pii.js';
import { encodeInputLine, escapeTrusted, labelLine, normaliseText, stripBidi } from '../render.js';
import { approxTokens, type TokenCounter } from '../tokens.js';
import { clockLineCuts } from '../time.js';
import type { Authority, Block, BlockKind, CacheClass, SourceText } from '../types.js';
import type { CompilerMemo, PreparedBlock } from './memo.js';

interface Placement {
  authority: Authority;
  cacheClass: CacheClass;
  inSystem: boolean;
}

const trusted = (cacheClass: CacheClass): Placement => ({ authority: 'trusted-directive', cacheClass, inSystem: true });
const advisory: Placement = { authority: 'advisory', cacheClass: 'volatile', inSystem: false };
const content: Placement = { authority: 'content', cacheClass: 'volatile', inSystem: false };

/** Where each kind goes. System-prompt kinds appear in BLOCK_KINDS order, which is also cache-class order. */
export const PLACEMENT: Readonly<Record<BlockKind, Placement>> = Object.freeze({
  identity: trusted('worker-stable'),
  'runtime-policy': trusted('worker-stable'),
  blueprint: trusted('worker-stable'),
  persona: trusted('worker-stable'),
  'hard-rules': trusted('worker-stable'),
  tools: trusted('worker-stable'),
  connections: trusted('worker-stable'),
  role: trusted('worker-stable'),
  capabilities: trusted('worker-stable'),
  purpose: trusted('channel-stable'),
  'runtime-scope': trusted('surface-stable'),
  clock: trusted('volatile'),
  memory: advisory,
  'live-context': advisory,
  topic: advisory,
  briefing: advisory,
  experience: advisory,
  evidence: content,
  preferences: advisory,
  task: content,
  message: content,
});

/** Different renderings of one text kept at once (the same text as another kind or source). */
const MAX_VARIANTS = 4;

export function render(kind: BlockKind, rawSource: string, text: string, brainDerived: boolean, recurring: boolean): PreparedBlock | null {
  const placement = PLACEMENT[kind];
  // No bidi control reaches a prompt, from the brain or a caller, in a block's text or its source.
  const source = stripBidi(rawSource);
  let body = placement.inSystem || placement.authority === 'advisory' || brainDerived ? normaliseText(text) : stripBidi(text);
  let redactions: Readonly<RedactionCounts> = NO_REDACTIONS;
  if (brainDerived) {
    const scrubbed = scrubPii(body);
    body = scrubbed.text;
    redactions = scrubbed.counts;
  }
  if (placement.inSystem) body = escapeTrusted(body);
  if (body.length === 0 || (!placement.inSystem && body.trim().length === 0)) return null;
  let segment: string;
  if (placement.inSystem) {
    // Identity is always first; every later block carries the blank line that separates it.
    const labelled = `${labelLine(kind, placement.authority, source)}\n${body}`;
    segment = kind === 'identity' ? labelled : `\n\n${labelled}`;
  } else {
    segment = `${encodeInputLine(kind, placement.authority, source, body)}\n`;
  }
  const sha256 = sha256Hex(body);
  // The segment is a function of kind, source and content: the digest names the content.
  const key = recurring ? `${sha256}:${kind}:${source}` : undefined;
  return {
    kind,
    source,
    content: body,
    sha256,
    approxTokens: approxTokens(body),
    segment,
    segmentKey: key,
    blockKey: key === undefined ? undefined : `${key}:${redactions.email}:${redactions.phone}`,
    segmentTokens: approxTokens(segment),
    redactions,
  };
}

/** `render`, remembered by source text (then kind, source and provenance): stable blocks cost one lookup per call. */
export function prepare(memo: CompilerMemo, kind: BlockKind, source: SourceText | undefined, memoize = true): PreparedBlock | null {
  if (!source) return null;
  const brainDerived = source.brainDerived === true;
  if (!memoize) return render(kind, source.source, source.text, brainDerived, false);
  const variants = memo.blocks.get(source.text);
  if (variants !== undefined) {
    for (const variant of variants) {
      if (variant.kind === kind && variant.source === source.source && variant.brainDerived === brainDerived) return variant.block;
    }
  }
  const block = render(kind, source.source, source.text, brainDerived, true);
  const kept = variants === undefined ? [] : variants.slice(-(MAX_VARIANTS - 1));
  // The key, the normalised content and the rendered segment: about three copies of the text.
  memo.blocks.set(source.text, [...kept, { kind, source: source.source, brainDerived, block }], 6 * source.text.length + 256);
  return block;
}

/**
 * The clock block of `line`, rendered once per minute while the small `clocks` area keeps it;
 * never a recurring block (no key). A new minute is derived from the day's template (the
 * block of the first minute seen with the same day and zone) when rendering left that line
 * as it was: the two lines differ only in four ASCII digits, which rendering never changes
 * and no marker, control or pair holds, so the new line renders as itself too, with the
 * same label and the same estimates (the same bytes, no pipe or fence among them). Only its
 * digest and its exact token count are new; the count is kept with the block, so the
 * minute's later compiles count nothing.
 */
export function clockBlock(memo: CompilerMemo, line: string, tokenizer: TokenCounter): PreparedBlock | null {
  const clocks = memo.clocks;
  const known = clocks.get(line);
  if (known !== undefined && known.tokens?.tokenizer === tokenizer.name) return known;
  const cuts = clockLineCuts(line);
  // A template's key: the line without its four digits, after a NUL no clock line starts with.
  const day = cuts === undefined ? undefined : `\0${line.slice(0, cuts.time)}${line.slice(cuts.zone)}`;
  const template = day === undefined ? undefined : clocks.get(day);
  const rendered = template !== undefined ? null : render('clock', 'builtin:clock', line, false, false);
  if (template === undefined && rendered === null) return null;
  const segment = template === undefined ? rendered!.segment : template.segment.slice(0, template.segment.length - line.length) + line;
  // Counted with the block, as the cache plan counts an unkeyed segment alone (never first: identity is), so the minute's compiles count nothing.
  const tokens: PieceTokens = { tokenizer: tokenizer.name, alone: countLabelled(segment.slice(2), tokenizer, memo.tokens) };
  const block: PreparedBlock = template !== undefined ? { ...template, content: line, sha256: sha256Hex(line), segment, tokens } : { ...rendered!, tokens };
  if (rendered !== null && day !== undefined && rendered.content === line && rendered.segment.endsWith(line)) clocks.set(day, block, 4 * segment.length + 512);
  clocks.set(line, block, 4 * segment.length + 512);
  return block;
}

/** The block a prepared block delivers, as compiles list it. */
export function blockOf(prepared: PreparedBlock): Block {
  const placement = PLACEMENT[prepared.kind];
  return {
    kind: prepared.kind,
    authority: placement.authority,
    cacheClass: placement.cacheClass,
    source: prepared.source,
    content: prepared.content,
    chars: prepared.content.length,
    approxTokens: prepared.approxTokens,
    sha256: prepared.sha256,
  };
}
