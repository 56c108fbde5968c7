/**
 * The budget: each kind within its limit and every mandatory block within the prompt's
 * (never truncated: a 422 naming what to shorten), and the optional input blocks taken in
 * rank order while they fit.
 */
import { ProblemError } from '../../errors.js';
import { preferencesText } from '../surfaces.js';
import { singleLine } from '../render.js';
import type { BlockKind, Budget, CompileInput } from '../types.js';
import { prepare } from './blocks.js';
import type { CompilerMemo, PreparedBlock } from './memo.js';
import { briefingText } from './texts.js';

/**
 * The input blocks in layout order: recalled notes, live state, host state, lessons,
 * material, then the turn itself. Mandatory content must fit (each kind within its own
 * limit, and all of it within the total, else a 422); briefing items, experiences and
 * memory notes are taken in rank order while they fit, and what is left out is counted.
 */
export function inputBlocks(memo: CompilerMemo, input: CompileInput, system: readonly PreparedBlock[], warnings: string[]): { inputs: PreparedBlock[]; omitted: Budget['omitted'] } {
  const { policy } = input;
  const limits = policy.blocks;
  const liveContext = prepare(memo, 'live-context', input.liveContext);
  const topic = prepare(memo, 'topic', input.topic);
  const evidence: PreparedBlock[] = [];
  for (const item of input.evidence ?? []) {
    const prepared = prepare(memo, 'evidence', { source: singleLine(item.sourceRef, 512) || 'request:evidence', text: item.content }, false);
    if (prepared) evidence.push(prepared);
  }
  const preferences = input.preferences ? prepare(memo, 'preferences', { source: 'request:preferences', text: preferencesText(input.preferences) }) : null;
  const task = prepare(memo, 'task', input.task, false);
  const message = prepare(memo, 'message', input.message, false);
  if (input.phase === 'turn' && !message) {
    throw new ProblemError('CC_VALIDATION_FAILED', '/message: the message is blank', { errors: [{ path: '/message', message: 'blank' }] });
  }

  const mandatoryInput: PreparedBlock[] = [];
  for (const prepared of [liveContext, topic]) if (prepared) mandatoryInput.push(prepared);
  for (const prepared of evidence) mandatoryInput.push(prepared);
  for (const prepared of [preferences, task, message]) if (prepared) mandatoryInput.push(prepared);
  let systemChars = 0;
  for (const prepared of system) {
    checkLimit(prepared.kind, prepared.content.length, limits);
    systemChars += prepared.segment.length;
  }
  let inputChars = 0;
  let evidenceChars = 0;
  for (const prepared of mandatoryInput) {
    if (prepared.kind === 'evidence') evidenceChars += prepared.content.length;
    else checkLimit(prepared.kind, prepared.content.length, limits);
    inputChars += prepared.segment.length;
  }
  if (evidenceChars > 0) checkLimit('evidence', evidenceChars, limits);
  const used = () => systemChars + (inputChars > 0 ? inputChars + 2 : 0);
  if (used() > policy.limitChars) throw overLimit(used(), policy.limitChars, [...system, ...mandatoryInput]);

  // Optional items, host state and lessons before recalled notes, each taken in rank order if it fits.
  const omitted = { memory: 0, briefing: 0, experience: 0 };
  const take = (kind: 'memory' | 'briefing' | 'experience', candidates: Array<PreparedBlock | null>): PreparedBlock[] => {
    const chosen: PreparedBlock[] = [];
    let chars = 0;
    for (const candidate of candidates) {
      if (!candidate) continue;
      const extra = candidate.segment.length + (inputChars === 0 ? 2 : 0);
      if (chars + candidate.content.length <= limits[kind] && used() + extra <= policy.limitChars) {
        chosen.push(candidate);
        chars += candidate.content.length;
        inputChars += candidate.segment.length;
      } else {
        omitted[kind]++;
      }
    }
    if (omitted[kind] > 0) warnings.push(`${omitted[kind]} ${kind} item${omitted[kind] === 1 ? '' : 's'} left out to stay within the budget`);
    return chosen;
  };
  const briefing = input.briefing?.length
    ? take('briefing', input.briefing.map((item) => prepare(memo, 'briefing', { source: 'request:briefing', text: briefingText(item) })))
    : [];
  const experiences = input.experiences?.length
    ? take(
        'experience',
        input.experiences.map((item) => prepare(memo, 'experience', { source: singleLine(item.sourceRef, 512) || 'request:experience', text: item.content }, false)),
      )
    : [];
  const memory = input.memory?.length ? take('memory', input.memory.map((note) => prepare(memo, 'memory', note))) : [];

  const inputs: PreparedBlock[] = memory;
  for (const prepared of [liveContext, topic]) if (prepared) inputs.push(prepared);
  for (const prepared of [...briefing, ...experiences, ...evidence]) inputs.push(prepared);
  for (const prepared of [preferences, task, message]) if (prepared) inputs.push(prepared);
  return { inputs, omitted };
}

function budgetExceeded(kind: BlockKind | 'instructions', chars: number, limit: number, detail: string): ProblemError {
  return new ProblemError('CC_BUDGET_EXCEEDED', detail, { extensions: { block: kind, chars, limit } });
}

/**
 * The 422 for mandatory blocks over the prompt limit. It names what to shorten by kind
 * totals, largest first: twenty evidence items of 1,900 chars are the thing to cut, not
 * the one task that is the largest single block.
 */
function overLimit(used: number, limit: number, blocks: readonly PreparedBlock[]): ProblemError {
  const byKind = new Map<BlockKind, { chars: number; blocks: number }>();
  for (const prepared of blocks) {
    const total = byKind.get(prepared.kind) ?? { chars: 0, blocks: 0 };
    total.chars += prepared.segment.length;
    total.blocks++;
    byKind.set(prepared.kind, total);
  }
  // Stable: equal totals keep layout order.
  const ranked = [...byKind.entries()].sort((a, b) => b[1].chars - a[1].chars);
  const shown = ranked
    .slice(0, 3)
    .map(([kind, total]) => `${kind} ${total.chars} chars${total.blocks > 1 ? ` in ${total.blocks} blocks` : ''}`);
  const [largest] = ranked[0]!;
  return new ProblemError(
    'CC_BUDGET_EXCEEDED',
    `The mandatory blocks need ${used} chars; the prompt limit is ${limit}. Shorten ${largest} first: by kind, ${shown.join(', ')}.`,
    { extensions: { block: 'instructions', chars: used, limit, largestKind: largest, byKind: Object.fromEntries(ranked.map(([kind, total]) => [kind, total.chars])) } },
  );
}

function checkLimit(kind: BlockKind, chars: number, limits: Record<BlockKind, number>): void {
  const limit = limits[kind];
  if (chars > limit) {
    throw budgetExceeded(kind, chars, limit, `The ${kind} block is ${chars} chars; its limit is ${limit}. It is never truncated: shorten it or raise the limit in policy.json.`);
  }
}
